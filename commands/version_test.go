package commands

import (
	"runtime/debug"
	"testing"
)

// TestVersionComesFromTheLinkerThenTheBuildInfo: a version set with -X wins;
// without one, the module version `go install …@v1.2.3` stamps is reported
// without its "v"; a build with none ("(devel)", or no build information)
// reports baseVersion.
func TestVersionComesFromTheLinkerThenTheBuildInfo(t *testing.T) {
	stamped := func(v string) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) { return &debug.BuildInfo{Main: debug.Module{Version: v}}, true }
	}
	none := func() (*debug.BuildInfo, bool) { return nil, false }
	for _, c := range []struct {
		linked string
		info   func() (*debug.BuildInfo, bool)
		want   string
	}{
		{"2.0.0-rc1", stamped("v1.2.3"), "2.0.0-rc1"},
		{"", stamped("v1.2.3"), "1.2.3"},
		{"", stamped("v0.0.0-20260101120000-0123456789ab+dirty"), "0.0.0-20260101120000-0123456789ab+dirty"},
		{"", stamped("(devel)"), baseVersion},
		{"", stamped(""), baseVersion},
		{"", none, baseVersion},
	} {
		if got := resolveVersion(c.linked, c.info); got != c.want {
			t.Errorf("resolveVersion(%q, …) = %q; want %q", c.linked, got, c.want)
		}
	}
}
