package batch

// Combine splits a batch into the runs its handler takes on one at a time:
// the items of one kind (kind returns other than K's zero value) together,
// in the place of the first of them, and each item of the zero kind alone;
// items keep their order within a run, and runs the order of their first
// items. A group commit runs each run as one write (SQLite's writer: the
// completions of one group go in multi-row statements).
func Combine[T any, K comparable](items []T, kind func(T) K) [][]T {
	var zero K
	runs := make([][]T, 0, len(items))
	var kinds []K   // the kinds met so far…
	var where []int // …and the index of each one's run
	for _, item := range items {
		k := kind(item)
		if k == zero {
			runs = append(runs, []T{item})
			continue
		}
		if i := indexOf(kinds, k); i >= 0 {
			runs[where[i]] = append(runs[where[i]], item)
			continue
		}
		kinds, where = append(kinds, k), append(where, len(runs))
		runs = append(runs, []T{item})
	}
	return runs
}

// indexOf is the index of k in kinds, or -1; a batch holds few kinds.
func indexOf[K comparable](kinds []K, k K) int {
	for i, x := range kinds {
		if x == k {
			return i
		}
	}
	return -1
}
