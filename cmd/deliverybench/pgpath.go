package main

import (
	"context"
	"time"
)

// schedulingCost starts measuring what scheduling the tasks costs: the
// returned function logs amsg's CPU and, on PostgreSQL, the server's per
// task scheduled (issue 24: every insert woke every instance to claim and
// to look up the next due task). The server's figure counts its processes
// that serve the phase's database and the shared ones.
func (b *bench) schedulingCost(ctx context.Context, instances []*amsgInstance) func(tasks int) {
	pids := make([]int, len(instances))
	for i, inst := range instances {
		pids[i] = inst.Pid()
	}
	before, err := b.mark(ctx, instances, pids)
	if err != nil {
		b.logf("warning: scheduling cost not measured: %v", err)
		return func(int) {}
	}
	return func(tasks int) {
		after, err := b.mark(ctx, instances, pids)
		if err != nil || tasks == 0 {
			b.logf("warning: scheduling cost not measured: %v", err)
			return
		}
		perTask := func(d time.Duration) int64 { return d.Microseconds() / int64(tasks) }
		if b.pg == nil {
			b.logf("amsg: scheduling cost %d µs of amsg CPU a task", perTask(after.amsgCPU-before.amsgCPU))
			return
		}
		b.logf("amsg: scheduling cost %d µs of amsg CPU and %d µs of PostgreSQL CPU a task", perTask(after.amsgCPU-before.amsgCPU),
			perTask(total(cpuBetween(before.dbCPU, after.dbCPU))+after.dbEndedCPU-before.dbEndedCPU))
	}
}
