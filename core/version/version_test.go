package version

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	t.Parallel()
	stamped := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-11-01T10:00:00Z"}, {Key: "vcs.modified", Value: "true"},
	}}
	tests := []struct {
		name                  string
		bi                    *debug.BuildInfo
		version, commit, date string
		want                  Info
	}{
		{"the VCS stamp of a checkout build", stamped, "", "", "",
			Info{Version: "devel", Commit: "abc123", Date: "2026-11-01T10:00:00Z", Modified: true}},
		{"the -X values win", stamped, "v1.2.3", "def456", "2026-11-02T00:00:00Z",
			Info{Version: "v1.2.3", Commit: "def456", Date: "2026-11-02T00:00:00Z", Modified: true}},
		{"a module version (go install)", &debug.BuildInfo{Main: debug.Module{Version: "v0.4.0"}}, "", "", "",
			Info{Version: "v0.4.0", Commit: "unknown", Date: "unknown"}},
		{"no build information", nil, "", "", "", Info{Version: "devel", Commit: "unknown", Date: "unknown"}},
	}
	for _, tc := range tests {
		if got := fromBuildInfo(tc.bi, tc.version, tc.commit, tc.date); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
	want := "gateway v1.2.3\ncommit def456 (modified)\nbuilt 2026-11-02T00:00:00Z\n"
	if got := fromBuildInfo(stamped, "v1.2.3", "def456", "2026-11-02T00:00:00Z").String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
