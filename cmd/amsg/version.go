package main

import (
	"runtime/debug"
	"strings"
)

// version is set for a release with -ldflags "-X main.version=v1.2.3"
// (cmd/release does); otherwise buildVersion derives one.
var version string

// releaseVersion is the newest version CHANGELOG.md has a section for. A
// build that is not a release reports it with the commit it was built from
// as semver build metadata, so even `go run` says which release it follows
// (a test keeps the two in step; docs/upgrading.md says how to release).
const releaseVersion = "v0.1.0"

// buildVersion is the version every build reports (amsg version,
// /capabilities serverVersion, the start log).
func buildVersion() string {
	info, _ := debug.ReadBuildInfo()
	return versionOf(version, info)
}

// versionOf is the link-time version, else the module's version when Go
// took it from a release tag, else releaseVersion followed by "+dev" and,
// when Go recorded it (go build in a git checkout; go run -buildvcs=true),
// the commit and whether the tree was modified: v0.1.0+dev.0123456789ab.dirty.
func versionOf(linked string, info *debug.BuildInfo) string {
	if linked != "" {
		return linked
	}
	if info == nil {
		return releaseVersion + "+dev"
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	v := info.Main.Version
	// A tag gives v1.2.3, a commit after it a pseudo-version
	// v1.2.4-0.20261126053332-50a887827c11, which names no release.
	if strings.HasPrefix(v, "v") && !strings.Contains(v, "-0.") && !strings.Contains(v, "+") && !strings.HasPrefix(v, "v0.0.0-") {
		return v
	}
	v = releaseVersion + "+dev"
	if rev := settings["vcs.revision"]; len(rev) >= 12 {
		v += "." + rev[:12]
	}
	if settings["vcs.modified"] == "true" {
		v += ".dirty"
	}
	return v
}
