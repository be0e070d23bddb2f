package main

import (
	"errors"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseOptionsDefaults(t *testing.T) {
	for _, tc := range []struct {
		args         []string
		tasks, users int
		runsNode     bool
	}{
		{nil, 3000, 100, true},
		{[]string{"--skip-node"}, 3000, 100, false},
		{[]string{"-short"}, 50, 10, true},
		{[]string{"--scenario", "backlog"}, 100_000, 1000, false},
		{[]string{"--scenario", "latency"}, 20_000, 100, false},
		{[]string{"--scenario", "latency", "--rate", "500", "--duration", "4s"}, 2000, 100, false},
		{[]string{"-n", "20", "--users", "4"}, 20, 4, true},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			o, err := parseOptions(tc.args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if o.Tasks != tc.tasks || o.Users != tc.users || o.runsNode() != tc.runsNode {
				t.Errorf("tasks %d, users %d, node %v; want %d, %d, %v", o.Tasks, o.Users, o.runsNode(), tc.tasks, tc.users, tc.runsNode)
			}
			if o.Instances != 1 || o.Rounds != 1 || !o.Pin || o.Inserters != 8 || o.Timeout != 10*time.Minute {
				t.Errorf("other defaults: %+v", o)
			}
		})
	}
}

func TestParseOptionsPassThrough(t *testing.T) {
	o, err := parseOptions([]string{"--database-url", "postgres://u@localhost/amsg", "--instances", "2",
		"--amsg-env", "AMSG_TASK_CONCURRENCY=64", "--amsg-env", "AMSG_TICK=500ms"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.DatabaseURL != "postgres://u@localhost/amsg" || o.Instances != 2 ||
		!slices.Equal(o.AmsgEnv, []string{"AMSG_TASK_CONCURRENCY=64", "AMSG_TICK=500ms"}) {
		t.Errorf("got %+v", o)
	}
}

func TestParseOptionsRejects(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--scenario", "fast"}, "--scenario"},
		{[]string{"-n", "-1"}, "--n"},
		{[]string{"-n", "10", "--users", "11"}, "--users"},
		{[]string{"--instances", "2"}, "needs --database-url"},
		{[]string{"--instances", "0"}, "--instances"},
		{[]string{"--scenario", "latency", "--rate", "0"}, "--rate"},
		{[]string{"--lead", "-1s"}, "--lead"},
		{[]string{"--rounds", "0"}, "--rounds"},
		{[]string{"--inserters", "0"}, "--inserters"},
		{[]string{"extra"}, "unexpected argument"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := parseOptions(tc.args, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
	var usage strings.Builder
	if _, err := parseOptions([]string{"--amsg-env", "TICK=1s"}, &usage); err == nil || !strings.Contains(usage.String(), "AMSG_NAME=value") {
		t.Errorf("--amsg-env without the AMSG_ prefix: %v, %q", err, usage.String())
	}
}

func TestHelp(t *testing.T) {
	var usage strings.Builder
	_, err := parseOptions([]string{"-h"}, &usage)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	for _, want := range []string{"web-push@3.6.7", "backlog", "latency", "--database-url", "taskset", "--skip-node"} {
		if !strings.Contains(usage.String(), want) {
			t.Errorf("the usage does not mention %q", want)
		}
	}
}

func TestQuotaEnv(t *testing.T) {
	if env := quotaEnv(100_000, 1000); env != nil {
		t.Errorf("100 tasks a user: %v, want amsg's default quota", env)
	}
	if env := quotaEnv(200_001, 100); !slices.Equal(env, []string{"AMSG_MAX_TASKS_PER_USER=2001"}) {
		t.Errorf("2001 tasks a user: %v", env)
	}
}
