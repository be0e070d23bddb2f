package scheduler

import (
	"errors"
	"fmt"
	"sync"

	"amsg/llm"
	"amsg/store"
)

// segmentCache keeps the segments of recurring fixed tasks' stored texts,
// so their occurrences do not split the same text again (about 9 µs a
// text with the default pattern, and a compilation with one of the
// task's own). An entry serves only the text and pattern it was split
// from: an edited task is split afresh. It holds maxCachedSegments tasks
// at most and starts over when full.
type segmentCache struct {
	mu     sync.Mutex
	byTask map[int64]cachedSegments
}

type cachedSegments struct {
	pattern, text string
	segments      []string // shared: never modified
}

// maxCachedSegments bounds the cache: about 4 MiB of texts of 1 KiB.
const maxCachedSegments = 4096

// get returns the segments of text split by pattern for task id, if kept.
func (c *segmentCache) get(id int64, pattern, text string) ([]string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byTask[id]
	if !ok || e.pattern != pattern || e.text != text {
		return nil, false
	}
	return e.segments, true
}

func (c *segmentCache) put(id int64, pattern, text string, segments []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byTask == nil || len(c.byTask) >= maxCachedSegments {
		c.byTask = make(map[int64]cachedSegments)
	}
	c.byTask[id] = cachedSegments{pattern: pattern, text: text, segments: segments}
}

// segments splits an occurrence's text with the task's splitPattern. The
// stored text of a recurring fixed task is split once and kept (cache).
func (s *Scheduler) segments(task store.Task, p Payload, rec Recurrence, text string, cache bool) ([]string, error) {
	cache = cache && rec.Recurring()
	pattern := string(p.SplitPattern)
	if cache {
		if segs, ok := s.segmentCache.get(task.ID, pattern, text); ok {
			return segs, nil
		}
	}
	splitter, err := llm.ParseSplitPattern(p.SplitPattern)
	if err != nil {
		return nil, fmt.Errorf("splitPattern: %w", err)
	}
	segments, err := splitter.Split(text)
	if errors.Is(err, llm.ErrSplitTimeout) || errors.Is(err, llm.ErrSplitInputTooLarge) {
		// Not kept: a busier moment may have timed out where a later one
		// would not.
		s.log.Warn("scheduler: splitPattern gave up; sending the text as one message", "taskId", task.ID, "err", err)
		return []string{text}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("splitPattern: %w", err)
	}
	if cache {
		s.segmentCache.put(task.ID, pattern, text, segments)
	}
	return segments, nil
}
