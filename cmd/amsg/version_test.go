package main

import (
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

func TestVersionOf(t *testing.T) {
	vcs := func(version string, settings ...string) *debug.BuildInfo {
		info := &debug.BuildInfo{Main: debug.Module{Path: "amsg", Version: version}}
		for i := 0; i < len(settings); i += 2 {
			info.Settings = append(info.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
		}
		return info
	}
	const rev = "50a887827c111d7ef94ac0887461829326e2556b"
	for _, c := range []struct {
		linked string
		info   *debug.BuildInfo
		want   string
	}{
		{"v1.2.3", vcs("(devel)"), "v1.2.3"},
		{"", nil, releaseVersion + "+dev"},
		{"", vcs("(devel)"), releaseVersion + "+dev"}, // go run: Go records no commit
		{"", vcs("v0.0.0-20261126053332-50a887827c11", "vcs.revision", rev, "vcs.modified", "false"), releaseVersion + "+dev.50a887827c11"},
		{"", vcs("v0.1.1-0.20261126053332-50a887827c11", "vcs.revision", rev, "vcs.modified", "true"), releaseVersion + "+dev.50a887827c11.dirty"},
		{"", vcs("v0.2.0", "vcs.revision", rev, "vcs.modified", "false"), "v0.2.0"}, // built at a tag
		{"", vcs("v0.2.0+dirty", "vcs.revision", rev, "vcs.modified", "true"), releaseVersion + "+dev.50a887827c11.dirty"},
	} {
		if got := versionOf(c.linked, c.info); got != c.want {
			t.Errorf("versionOf(%q, %v) = %q, want %q", c.linked, c.info, got, c.want)
		}
	}
}

// releaseVersion is the newest version CHANGELOG.md has a section for, and
// the changelog's sections are Unreleased first, then versions, newest
// first, each with its date.
func TestReleaseVersionIsTheChangelogsNewest(t *testing.T) {
	changelog, err := os.ReadFile("../../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	headings := regexp.MustCompile(`(?m)^## .*$`).FindAllString(string(changelog), -1)
	if len(headings) < 2 || headings[0] != "## [Unreleased]" {
		t.Fatalf("sections %q: want [Unreleased] first, then versions", headings)
	}
	section := regexp.MustCompile(`^## \[(\d+)\.(\d+)\.(\d+)\] - \d{4}-\d{2}-\d{2}$`)
	for _, h := range headings[1:] {
		if !section.MatchString(h) {
			t.Errorf("section %q is not \"## [X.Y.Z] - YYYY-MM-DD\"", h)
		}
	}
	if newest := section.FindStringSubmatch(headings[1]); newest == nil || "v"+strings.Join(newest[1:], ".") != releaseVersion {
		t.Errorf("the newest section is %q, releaseVersion %s", headings[1], releaseVersion)
	}
}

// Every build says which version it is, the same in amsg version, the
// start log and /capabilities.
func TestTheVersionIsStampedEverywhere(t *testing.T) {
	code, stdout, _ := runAmsg(t, nil, "version")
	version := strings.TrimPrefix(strings.TrimSpace(stdout), "amsg ")
	if code != 0 || !strings.HasPrefix(version, releaseVersion) {
		t.Fatalf("amsg version: exit %d %q, want %s…", code, stdout, releaseVersion)
	}
	p := startAmsg(t, t.TempDir())
	if logged := p.WaitLog(t, "amsg listening", time.Second)["version"]; logged != version {
		t.Errorf("the start log says version %v, amsg version %q", logged, version)
	}
	resp, err := http.Get(p.URL + "/api/v1/capabilities")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		ServerVersion string `json:"serverVersion"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.ServerVersion != version {
		t.Errorf("/capabilities serverVersion %q (%v), amsg version %q", body.ServerVersion, err, version)
	}
}
