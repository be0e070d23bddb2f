package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// tailLines is how many of a child's last stderr lines an error report shows.
const tailLines = 20

// child is a process the benchmark started and must stop.
type child struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited
	err  error         // its exit status, once done is closed

	mu   sync.Mutex
	tail []string // its last stderr lines
}

// Pid is the process to measure: taskset execs its command, so the pid
// stays the same.
func (c *child) Pid() int { return c.cmd.Process.Pid }

// Exited returns an error if the process has ended, naming its last words.
func (c *child) Exited() error {
	select {
	case <-c.done:
		return fmt.Errorf("%s exited (%v); its last output:\n%s", c.name, c.err, c.Tail())
	default:
		return nil
	}
}

// Tail returns the last lines the process wrote to stderr.
func (c *child) Tail() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.tail, "\n")
}

// readStderr keeps the last lines of r worth telling and hands each line
// to onLine.
func (c *child) readStderr(r io.Reader, spec childSpec) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if spec.worthTelling == nil || spec.worthTelling(line) {
			c.mu.Lock()
			c.tail = append(c.tail, line)
			if len(c.tail) > tailLines {
				c.tail = c.tail[1:]
			}
			c.mu.Unlock()
		}
		if spec.onLine != nil {
			spec.onLine(line)
		}
	}
}

// supervisor starts children and stops every one of them at the end, on an
// error path as on success.
type supervisor struct {
	taskset string // path of taskset; empty runs unpinned

	mu       sync.Mutex
	children []*child
}

// childSpec is a process to start.
type childSpec struct {
	name   string
	cpu    int // CPU to pin to; -1 for none
	path   string
	args   []string
	env    []string // added to this process's environment
	stdin  bool     // give it a pipe it reads until the benchmark ends
	stdout io.Writer
	onLine func(string) // called with each stderr line; may be nil
	// worthTelling picks the stderr lines an error report quotes; nil
	// quotes the last lines whatever they are.
	worthTelling func(string) bool
}

// start runs spec. The process gets SIGTERM if the benchmark dies.
func (s *supervisor) start(spec childSpec) (*child, io.WriteCloser, error) {
	path, args := spec.path, spec.args
	if spec.cpu >= 0 && s.taskset != "" {
		path, args = s.taskset, append([]string{"-c", strconv.Itoa(spec.cpu), spec.path}, args...)
	}
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), spec.env...)
	cmd.Stdout = spec.stdout
	cmd.SysProcAttr = childAttr()
	var stdin io.WriteCloser
	var err error
	if spec.stdin {
		if stdin, err = cmd.StdinPipe(); err != nil {
			return nil, nil, err
		}
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("starting %s: %w", spec.name, err)
	}
	c := &child{name: spec.name, cmd: cmd, done: make(chan struct{})}
	stderrDone := make(chan struct{})
	go func() {
		c.readStderr(stderr, spec)
		close(stderrDone)
	}()
	go func() {
		<-stderrDone // Wait closes the pipe; read it to the end first
		c.err = cmd.Wait()
		close(c.done)
	}()
	s.mu.Lock()
	s.children = append(s.children, c)
	s.mu.Unlock()
	return c, stdin, nil
}

// stopAll stops every child still running, newest first.
func (s *supervisor) stopAll(grace time.Duration) error {
	s.mu.Lock()
	children := s.children
	s.mu.Unlock()
	var errs []error
	for i := len(children) - 1; i >= 0; i-- {
		errs = append(errs, s.stop(children[i], grace))
	}
	return errors.Join(errs...)
}

// stop sends c SIGTERM, kills it if it has not exited within grace, and
// forgets it.
func (s *supervisor) stop(c *child, grace time.Duration) error {
	s.mu.Lock()
	s.children = slices.DeleteFunc(s.children, func(o *child) bool { return o == c })
	s.mu.Unlock()
	select {
	case <-c.done:
		return nil
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
		return nil
	case <-time.After(grace):
		_ = c.cmd.Process.Kill()
		<-c.done
		return fmt.Errorf("%s did not stop within %s of SIGTERM and was killed", c.name, grace)
	}
}
