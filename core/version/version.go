// Package version is what `gateway version` prints and the start line logs: the version, the
// commit and the build date, read from the build's VCS stamp (debug.ReadBuildInfo) unless the
// link step set them (make image builds with -buildvcs=false and passes them with -X).
package version

import (
	"fmt"
	"runtime/debug"
)

// Set with -ldflags '-X modelgateway/core/version.Version=v1.2.3' (and .Commit, .Date): they
// win over the VCS stamp, which a build outside a checkout or with -buildvcs=false lacks.
var (
	Version string
	Commit  string
	Date    string
)

// Info is one build's identity.
type Info struct {
	Version  string // the -X version, else the module version, else "devel"
	Commit   string // the VCS revision, "unknown" when the build has none
	Date     string // the commit time (RFC 3339) the build came from, "unknown" when none
	Modified bool   // the working tree had uncommitted changes
}

// Get reads the running binary's identity.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return fromBuildInfo(bi, Version, Commit, Date)
}

// fromBuildInfo is Get with the build information and the -X overrides given.
func fromBuildInfo(bi *debug.BuildInfo, version, commit, date string) Info {
	var i Info
	if bi != nil {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			i.Version = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				i.Commit = s.Value
			case "vcs.time":
				i.Date = s.Value
			case "vcs.modified":
				i.Modified = s.Value == "true"
			}
		}
	}
	for _, o := range []struct {
		dst    *string
		v, def string
	}{
		{&i.Version, version, "devel"}, {&i.Commit, commit, "unknown"}, {&i.Date, date, "unknown"},
	} {
		if o.v != "" {
			*o.dst = o.v
		}
		if *o.dst == "" {
			*o.dst = o.def
		}
	}
	return i
}

// String is the line `gateway version` prints.
func (i Info) String() string {
	commit := i.Commit
	if i.Modified {
		commit += " (modified)"
	}
	return fmt.Sprintf("gateway %s\ncommit %s\nbuilt %s\n", i.Version, commit, i.Date)
}
