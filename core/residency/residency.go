// Package residency takes the pages of the gateway's own executable that only its start-up
// needed out of its resident set.
//
// The binary carries far more code and tables than one replica's request path runs (the bot,
// the status site, the bench, the simulator, the admin API, every package's init), and the
// start-up touches most of it: package inits, migrations, the catalogue's load. The kernel
// maps a file's pages around each fault (fault-around, 64 KiB), so an idle gateway had 26 of
// its binary's 36 MiB of code and read-only data resident, and kept them for its life: more
// than half of its peak RSS. Drop hands those mappings' pages back once the server is up;
// the request path faults back in what it uses, from the page cache, once.
package residency

import "log/slog"

// Drop takes the executable's read-only and executable pages out of this process's resident
// set and says how many bytes of mappings it covered. The pages stay in the page cache; the
// next use of one maps it again (a minor fault). Where the kernel offers no such advice (not
// Linux) it does nothing.
func Drop() (int64, error) { return drop() }

// AfterStartup drops the start-up's pages (Drop) and says so on log; a failure only leaves
// them resident, so it is a warning.
func AfterStartup(log *slog.Logger) {
	n, err := Drop()
	if err != nil {
		log.Warn("start-up pages stay resident", "err", err)
		return
	}
	log.Debug("start-up pages left the resident set", "mapped_bytes", n)
}
