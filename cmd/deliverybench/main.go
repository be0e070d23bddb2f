// Command deliverybench measures amsg's scheduled Web Push delivery against
// node's web-push@3.6.7 on this machine, in one run, into a push service
// that verifies and decrypts every push (see -h and docs/performance.md).
//
//	go run ./cmd/deliverybench                       # 3000 pushes, node and amsg, and the ratio
//	go run ./cmd/deliverybench --scenario backlog    # 100 000 due tasks, time and peak RSS
//	go run ./cmd/deliverybench --scenario latency    # due-to-delivered p99 at 1000 tasks/s
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := runMain(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// runMain returns the exit status: 0 success, 1 a failed run, 2 bad flags.
func runMain(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == pushServiceCommand {
		if err := runPushService(ctx, args[1:], stdin, stdout); err != nil {
			fmt.Fprintf(stderr, "deliverybench %s: %v\n", pushServiceCommand, err)
			return 1
		}
		return 0
	}
	o, err := parseOptions(args, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "deliverybench: %v\n", err)
		return 2
	}
	if err := run(ctx, o, stdout); err != nil {
		fmt.Fprintf(stderr, "deliverybench: %v\n", err)
		return 1
	}
	return 0
}
