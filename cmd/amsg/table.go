package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// maxCellRunes bounds a table cell: long messages and errors are cut, the
// full value is in --json.
const maxCellRunes = 60

// member is one member of a JSON object, in the order the server wrote it.
type member struct {
	name  string
	value json.RawMessage
}

// objectMembers decodes a JSON object keeping its members' order; ok is
// false for anything that is not an object.
func objectMembers(raw json.RawMessage) (members []member, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, false
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, false
		}
		members = append(members, member{key.(string), value})
	}
	return members, true
}

// printTable writes an admin answer for a person: an array of objects as a
// table with a column per member, an object's scalar members as
// "name: value" lines and its arrays of objects as tables under their name.
func printTable(w io.Writer, data json.RawMessage) error {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '[' {
		return writeRows(w, data)
	}
	members, ok := objectMembers(data)
	if !ok {
		_, err := fmt.Fprintln(w, cell(data))
		return err
	}
	for _, m := range members {
		if v := bytes.TrimSpace(m.value); len(v) > 0 && v[0] == '[' {
			if _, err := fmt.Fprintf(w, "%s:\n", m.name); err != nil {
				return err
			}
			if err := writeRows(w, v); err != nil {
				return err
			}
			continue
		}
		if _, err := fmt.Fprintf(w, "%s: %s\n", m.name, cell(m.value)); err != nil {
			return err
		}
	}
	return nil
}

// writeRows writes an array as a table: a column per member of its
// objects, in the order they first appear; an array of scalars one per line.
func writeRows(w io.Writer, raw json.RawMessage) error {
	var rows []json.RawMessage
	if err := json.Unmarshal(raw, &rows); err != nil {
		return err
	}
	if len(rows) == 0 {
		_, err := fmt.Fprintln(w, "  (none)")
		return err
	}
	var columns []string
	seen := map[string]bool{}
	cells := make([]map[string]string, len(rows))
	for i, row := range rows {
		members, ok := objectMembers(row)
		if !ok {
			cells[i] = map[string]string{"": cell(row)}
			members = []member{{name: ""}}
		} else {
			cells[i] = map[string]string{}
			for _, m := range members {
				cells[i][m.name] = cell(m.value)
			}
		}
		for _, m := range members {
			if !seen[m.name] {
				seen[m.name] = true
				columns = append(columns, m.name)
			}
		}
	}
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  %s\n", strings.Join(columns, "\t"))
	for _, row := range cells {
		values := make([]string, len(columns))
		for i, c := range columns {
			values[i] = row[c]
		}
		fmt.Fprintf(tw, "  %s\n", strings.Join(values, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for line := range strings.Lines(table.String()) {
		if _, err := fmt.Fprintln(w, strings.TrimRight(line, " \n")); err != nil {
			return err
		}
	}
	return nil
}

// cell is a value as a table shows it: strings unquoted, null as "-",
// anything else as compact JSON, cut to maxCellRunes.
func cell(raw json.RawMessage) string {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		var compact bytes.Buffer
		if json.Compact(&compact, raw) != nil {
			compact.Write(raw)
		}
		s = compact.String()
		if s == "null" {
			s = "-"
		}
	}
	s = strings.Join(strings.Fields(s), " ") // no tabs or newlines in a cell
	if r := []rune(s); len(r) > maxCellRunes {
		s = string(r[:maxCellRunes-1]) + "…"
	}
	if s == "" {
		return "-"
	}
	return s
}
