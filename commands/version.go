package commands

import (
	"runtime/debug"
	"strings"
)

// Version is sluice's version: what HELLO's "version", INFO server's
// sluice_version, the metrics' sluice_build_info and `sluice --version`
// report. A release build sets it at link time:
//
//	go build -ldflags "-X github.com/sluice-rl/sluice/commands.Version=1.2.3" ./cmd/sluice
//
// Left empty, it is the main module's version that the go command stamped
// into the binary (`go install github.com/sluice-rl/sluice/cmd/sluice@v1.2.3`
// reports 1.2.3), without its leading "v", or baseVersion when the build
// carries none (a test binary, a build outside version control). It is set
// once, before main runs, and read-only after.
var Version string

// baseVersion is the version of a build that carries no other.
const baseVersion = "0.1.0"

func init() { Version = resolveVersion(Version, debug.ReadBuildInfo) }

// resolveVersion returns linked if the linker set it, else the main
// module's version from the build information, else baseVersion.
func resolveVersion(linked string, info func() (*debug.BuildInfo, bool)) string {
	if linked != "" {
		return linked
	}
	if bi, ok := info(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return strings.TrimPrefix(bi.Main.Version, "v")
	}
	return baseVersion
}
