package batch

import (
	"reflect"
	"testing"
)

// Items of one kind go in one run in the place of the first; items of no
// kind (0) each alone; order is kept within and between runs.
func TestCombineGathersEachKindInThePlaceOfItsFirst(t *testing.T) {
	type item struct {
		name string
		kind int
	}
	items := []item{{"a", 1}, {"b", 0}, {"c", 2}, {"d", 1}, {"e", 0}, {"f", 2}, {"g", 1}}
	var got [][]string
	for _, run := range Combine(items, func(i item) int { return i.kind }) {
		var names []string
		for _, i := range run {
			names = append(names, i.name)
		}
		got = append(got, names)
	}
	want := [][]string{{"a", "d", "g"}, {"b"}, {"c", "f"}, {"e"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("runs %q, want %q", got, want)
	}
	if runs := Combine([]item{}, func(i item) int { return i.kind }); len(runs) != 0 {
		t.Errorf("runs of no items: %v", runs)
	}
}
