package api

import (
	"context"

	"amsg/loop"
	"amsg/store"
)

// admitTask refuses a new task before anything of its request is written:
// over the user's task quota (403 QUOTA_EXCEEDED), or with a uuid already
// taken (409, which InsertTask would answer after the subscription was
// stored).
func (s *Server) admitTask(ctx context.Context, userID, uuid string) error {
	n, err := s.deps.Store.PendingTasks(ctx, userID)
	if err != nil {
		return err
	}
	if limit := s.cfg.Limits.MaxTasksPerUser; n >= limit {
		return quotaExceeded("tasksPerUser", int64(limit))
	}
	if uuid == "" {
		return nil
	}
	taken, err := s.deps.Store.TaskUUIDTaken(ctx, uuid)
	if err != nil {
		return err
	}
	if taken {
		return errTaskUUIDConflict
	}
	return nil
}

// admitClientState refuses a client-state write that would take the user,
// or one of the namespaces it writes, over its quota. Values the write
// replaces do not count.
func (s *Server) admitClientState(ctx context.Context, userID string, entries []store.ClientStateEntry) error {
	type write struct {
		keys     []string
		incoming int64
	}
	byNamespace := map[string]*write{}
	var order []string
	for _, e := range entries {
		if e.Delete {
			continue // a delete only frees space
		}
		w := byNamespace[e.Namespace]
		if w == nil {
			w = &write{}
			byNamespace[e.Namespace] = w
			order = append(order, e.Namespace)
		}
		w.keys = append(w.keys, e.Key)
		w.incoming += store.StateBytes(len(e.Value))
	}
	var user, replaced, incoming int64
	for _, ns := range order {
		w := byNamespace[ns]
		u, err := s.deps.Store.ClientStateUsage(ctx, userID, ns, w.keys)
		if err != nil {
			return err
		}
		if limit := s.cfg.Limits.MaxStateBytesPerNamespace; u.NamespaceBytes-u.ReplacedBytes+w.incoming > limit {
			return quotaExceeded("clientStateBytesPerNamespace", limit)
		}
		user, replaced, incoming = u.UserBytes, replaced+u.ReplacedBytes, incoming+w.incoming
	}
	if limit := s.cfg.Limits.MaxStateBytesPerUser; user-replaced+incoming > limit {
		return quotaExceeded("clientStateBytesPerUser", limit)
	}
	return nil
}

// pushBudget bounds a request's round to MaxPushesPerRound pushes
// (loop.CapPushes).
func (s *Server) pushBudget(emit loop.Emit) loop.Emit {
	return loop.CapPushes(s.cfg.Limits.MaxPushesPerRound, emit)
}
