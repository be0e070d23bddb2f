package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"amsg/push/errcode"
)

// `amsg send` and `amsg admin …` are clients of the operator API: the
// server from --server or AMSG_SERVER, the token from AMSG_ADMIN_TOKEN.

const defaultServer = "http://localhost:8080"

// adminClient calls one server's /api/v1/admin/ routes.
type adminClient struct {
	base  string
	token string
	http  *http.Client
}

// adminFlags registers --server on fs and returns a function that builds
// the client once fs is parsed.
func adminFlags(fs *flag.FlagSet, getenv func(string) string) func() (*adminClient, error) {
	server := fs.String("server", "", "amsg server URL (env AMSG_SERVER, default "+defaultServer+")")
	return func() (*adminClient, error) {
		base := cmp.Or(*server, getenv("AMSG_SERVER"), defaultServer)
		u, err := url.Parse(base)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("--server %q is not an http(s) URL", base)
		}
		token := getenv("AMSG_ADMIN_TOKEN")
		if token == "" {
			return nil, errors.New("set AMSG_ADMIN_TOKEN to the server's operator token")
		}
		return &adminClient{base: strings.TrimRight(base, "/"), token: token, http: &http.Client{Timeout: time.Minute}}, nil
	}
}

// call sends one request and decodes the envelope's data into out, or
// returns the envelope's error.
func (c *adminClient) call(ctx context.Context, method, path string, body, out any) error {
	var reader io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return err
		}
		reader = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, reader)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var env struct {
		Success bool            `json:"success"`
		Data    json.RawMessage `json:"data"`
		Error   *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&env); err != nil {
		return fmt.Errorf("%s %s: %s, and the body is not amsg's JSON", method, path, resp.Status)
	}
	if env.Error != nil {
		if env.Error.Code == errcode.NotFound.Code() {
			return fmt.Errorf("%s: %s (is AMSG_ADMIN_TOKEN set on the server?)", env.Error.Code, env.Error.Message)
		}
		return fmt.Errorf("%s: %s", env.Error.Code, env.Error.Message)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(env.Data, out)
}

// commandFlags is a command's flag set: errors and -h go to stderr, -h
// prints usage and then the flags.
func commandFlags(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, usage)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args and reports -h as done (status 0) and misuse as
// status 2.
func parseFlags(fs *flag.FlagSet, args []string) (status int, done bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, true
		}
		return 2, true
	}
	return 0, false
}

// runSend is `amsg send --user ID [--title T] TEXT`.
func runSend(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := commandFlags("amsg send", "Usage: amsg send --user ID [--title T] [--contact NAME] [--subtype S] TEXT\n\nSends TEXT as a notification to every device of the user.", stderr)
	user := fs.String("user", "", "the user id to send to (required)")
	title := fs.String("title", "", "notification title")
	contact := fs.String("contact", "", "contactName of the push")
	subtype := fs.String("subtype", "", "messageSubtype of the push (default chat)")
	client := adminFlags(fs, getenv)
	if status, done := parseFlags(fs, args); done {
		return status
	}
	text := strings.Join(fs.Args(), " ")
	if *user == "" || strings.TrimSpace(text) == "" {
		fs.Usage()
		return 2
	}
	c, err := client()
	if err != nil {
		fmt.Fprintf(stderr, "amsg send: %v\n", err)
		return 2
	}
	var res struct {
		MessageID string `json:"messageId"`
		Delivered bool   `json:"delivered"`
		Devices   []struct {
			DeviceID int64  `json:"deviceId"`
			PushHost string `json:"pushHost"`
			Outcome  string `json:"outcome"`
			Status   int    `json:"status"`
			Error    string `json:"error"`
		} `json:"devices"`
	}
	body := map[string]string{"userId": *user, "message": text, "title": *title, "contactName": *contact, "messageSubtype": *subtype}
	if err := c.call(ctx, http.MethodPost, "/api/v1/admin/send", body, &res); err != nil {
		fmt.Fprintf(stderr, "amsg send: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s\n", res.MessageID)
	for _, d := range res.Devices {
		fmt.Fprintf(stdout, "  device %d (%s): %s %d %s\n", d.DeviceID, d.PushHost, d.Outcome, d.Status, d.Error)
	}
	if !res.Delivered {
		fmt.Fprintln(stderr, "amsg send: no device took the message")
		return 1
	}
	return 0
}

const adminUsage = `Usage: amsg admin <command> [flags]

Commands (AMSG_ADMIN_TOKEN and --server / AMSG_SERVER as for amsg send):
  users                       list users with device and task counts
  devices USER                list a user's devices
  tasks [--status S]          list tasks of every user
  failed [--hours N]          recent failed delivery attempts
  broadcast (--all | --users A,B) [--title T] TEXT
                              send TEXT to many users, paced; prints the broadcast id
  broadcast-status ID         a broadcast's progress
  resume ID                   continue a stopped broadcast after its cursor
  delete-user USER            delete a user and everything stored for them
  timeline USER MESSAGE       what became of one of the user's messages, event by event

Answers print as tables; --json prints the API's data as JSON, for scripts.
`

// runAdmin is `amsg admin <command>`: it prints the answer's data as
// tables, or as JSON with --json.
func runAdmin(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, adminUsage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	fs := commandFlags("amsg admin "+args[0], adminUsage, stderr)
	client := adminFlags(fs, getenv)
	status := fs.String("status", "", "tasks: pending, sent or failed")
	hours := fs.Int("hours", 24, "failed: how many hours back")
	all := fs.Bool("all", false, "broadcast: to every user")
	users := fs.String("users", "", "broadcast: comma-separated user ids")
	title := fs.String("title", "", "broadcast: notification title")
	asJSON := fs.Bool("json", false, "print the answer's data as JSON")
	if code, done := parseFlags(fs, args[1:]); done {
		return code
	}
	rest := fs.Args()
	needs := map[string]int{"users": 0, "devices": 1, "tasks": 0, "failed": 0, "broadcast-status": 1, "resume": 1, "delete-user": 1, "timeline": 2}
	n, known := needs[args[0]]
	switch {
	case args[0] == "broadcast":
		if len(rest) == 0 {
			fmt.Fprint(stderr, adminUsage)
			return 2
		}
	case !known:
		fmt.Fprintf(stderr, "amsg admin: unknown command %q\n%s", args[0], adminUsage)
		return 2
	case len(rest) != n:
		fmt.Fprintf(stderr, "amsg admin %s: want %d argument(s)\n%s", args[0], n, adminUsage)
		return 2
	}
	c, err := client()
	if err != nil {
		fmt.Fprintf(stderr, "amsg admin: %v\n", err)
		return 2
	}
	method, path, body := http.MethodGet, "", any(nil)
	switch args[0] {
	case "users":
		path = "/api/v1/admin/users"
	case "devices":
		path = "/api/v1/admin/users/" + url.PathEscape(rest[0]) + "/devices"
	case "tasks":
		path = "/api/v1/admin/tasks?status=" + url.QueryEscape(*status)
	case "failed":
		path = fmt.Sprintf("/api/v1/admin/deliveries/failed?hours=%d", *hours)
	case "broadcast-status":
		path = "/api/v1/admin/broadcasts/" + url.PathEscape(rest[0])
	case "resume":
		method, path = http.MethodPost, "/api/v1/admin/broadcasts/"+url.PathEscape(rest[0])+"/resume"
	case "delete-user":
		method, path = http.MethodDelete, "/api/v1/admin/users/"+url.PathEscape(rest[0])
	case "timeline":
		path = "/api/v1/admin/messages/" + url.PathEscape(rest[1]) + "/timeline?userId=" + url.QueryEscape(rest[0])
	case "broadcast":
		req := map[string]any{"message": strings.Join(rest, " "), "title": *title, "all": *all}
		if *users != "" {
			req["userIds"] = strings.Split(*users, ",")
		}
		method, path, body = http.MethodPost, "/api/v1/admin/broadcasts", req
	}
	var data json.RawMessage
	if err := c.call(ctx, method, path, body, &data); err != nil {
		fmt.Fprintf(stderr, "amsg admin %s: %v\n", args[0], err)
		return 1
	}
	if !*asJSON {
		if err := printTable(stdout, data); err != nil {
			fmt.Fprintf(stderr, "amsg admin %s: %v\n", args[0], err)
			return 1
		}
		return 0
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, data, "", "  "); err != nil {
		pretty.Write(data)
	}
	fmt.Fprintln(stdout, pretty.String())
	return 0
}
