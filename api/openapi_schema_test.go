package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// schemaChecker validates JSON values against the subset of JSON Schema
// the document uses: $ref (local), type, const, enum, oneOf (as anyOf),
// required, properties, additionalProperties and items.
type schemaChecker struct{ doc map[string]any }

func (c schemaChecker) resolve(schema map[string]any) map[string]any {
	for {
		ref, ok := schema["$ref"].(string)
		if !ok {
			return schema
		}
		var node any = c.doc
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			node = node.(map[string]any)[part]
		}
		schema = node.(map[string]any)
	}
}

// check returns the first place value breaks schema, or "".
func (c schemaChecker) check(schema map[string]any, value any, at string) string {
	schema = c.resolve(schema)
	if want, ok := schema["const"]; ok && fmt.Sprint(want) != fmt.Sprint(value) {
		return fmt.Sprintf("%s: %v, want the constant %v", at, value, want)
	}
	if enum, ok := schema["enum"].([]any); ok && !slices.ContainsFunc(enum, func(e any) bool { return fmt.Sprint(e) == fmt.Sprint(value) }) {
		return fmt.Sprintf("%s: %v is not one of %v", at, value, enum)
	}
	if alternatives, ok := schema["oneOf"].([]any); ok {
		var why []string
		for _, alt := range alternatives {
			msg := c.check(alt.(map[string]any), value, at)
			if msg == "" {
				why = nil
				break
			}
			why = append(why, msg)
		}
		if why != nil {
			return fmt.Sprintf("%s matches none of oneOf: %s", at, strings.Join(why, "; "))
		}
	}
	if types := schemaTypes(schema["type"]); len(types) > 0 && !slices.Contains(types, jsonType(value)) &&
		!(jsonType(value) == "integer" && slices.Contains(types, "number")) {
		return fmt.Sprintf("%s: a %s, want %v", at, jsonType(value), types)
	}
	switch v := value.(type) {
	case map[string]any:
		props, _ := schema["properties"].(map[string]any)
		for _, name := range schemaTypes(schema["required"]) {
			if _, ok := v[name]; !ok {
				return fmt.Sprintf("%s: lacks required %q", at, name)
			}
		}
		for name, member := range v {
			if sub, ok := props[name].(map[string]any); ok {
				if msg := c.check(sub, member, at+"."+name); msg != "" {
					return msg
				}
				continue
			}
			switch extra := schema["additionalProperties"].(type) {
			case bool:
				if !extra {
					return fmt.Sprintf("%s: %q is not in the schema", at, name)
				}
			case map[string]any:
				if msg := c.check(extra, member, at+"."+name); msg != "" {
					return msg
				}
			}
		}
	case []any:
		if items, ok := schema["items"].(map[string]any); ok {
			for i, item := range v {
				if msg := c.check(items, item, fmt.Sprintf("%s[%d]", at, i)); msg != "" {
					return msg
				}
			}
		}
	}
	return ""
}

func schemaTypes(v any) []string {
	switch t := v.(type) {
	case string:
		return []string{t}
	case []any:
		out := make([]string, len(t))
		for i, x := range t {
			out[i] = x.(string)
		}
		return out
	}
	return nil
}

func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if x == float64(int64(x)) {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	}
	return "object"
}

// servedDocument is the OpenAPI document s serves.
func servedDocument(t *testing.T, s *Server) schemaChecker {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(do(t, s, http.MethodGet, "/api/v1/openapi.json", nil).body), &doc); err != nil {
		t.Fatal(err)
	}
	return schemaChecker{doc}
}

// The served document's ErrorCode lists exactly the codes of the table.
func TestOpenAPIErrorCodesAreTheTable(t *testing.T) {
	c := servedDocument(t, fullServer(t))
	schema := c.resolve(map[string]any{"$ref": "#/components/schemas/ErrorCode"})
	var served []string
	for _, code := range schema["enum"].([]any) {
		served = append(served, code.(string))
	}
	if !slices.Equal(served, errorCodes()) || len(served) < 30 {
		t.Errorf("ErrorCode enum %v, the table %v", served, errorCodes())
	}
}

// Every schema in the document says what it holds: an object lists its
// members or says what its extra members are, and says whether members it
// does not list may appear (false where the shape is closed); a schema
// that admits any JSON says so in a description; a sealed body says what
// it seals.
func TestOpenAPISchemasAreNotLoose(t *testing.T) {
	c := servedDocument(t, fullServer(t))
	var walk func(at string, schema map[string]any)
	walk = func(at string, schema map[string]any) {
		if _, ok := schema["$ref"]; ok {
			return
		}
		types := schemaTypes(schema["type"])
		_, hasProps := schema["properties"]
		_, hasExtra := schema["additionalProperties"]
		_, hasAlternatives := schema["oneOf"]
		_, hasConst := schema["const"]
		_, hasDescription := schema["description"]
		switch {
		case slices.Contains(types, "object") && !hasExtra:
			t.Errorf("%s: an object that does not say whether other members may appear", at)
		case len(types) == 0 && !hasAlternatives && !hasConst && !hasDescription:
			t.Errorf("%s: admits any JSON without a description", at)
		case hasProps && !slices.Contains(types, "object"):
			t.Errorf("%s: members without type object", at)
		}
		props, _ := schema["properties"].(map[string]any)
		for name, sub := range props {
			walk(at+"."+name, sub.(map[string]any))
		}
		for _, key := range []string{"items", "additionalProperties", "x-amsg-plaintext"} {
			if sub, ok := schema[key].(map[string]any); ok {
				walk(at+"/"+key, sub)
			}
		}
		alternatives, _ := schema["oneOf"].([]any)
		for i, sub := range alternatives {
			walk(fmt.Sprintf("%s/oneOf[%d]", at, i), sub.(map[string]any))
		}
	}
	for name, schema := range c.doc["components"].(map[string]any)["schemas"].(map[string]any) {
		walk(name, schema.(map[string]any))
	}
	// Inline schemas of requests, answers and events.
	for path, ops := range c.doc["paths"].(map[string]any) {
		for method, op := range ops.(map[string]any) {
			op := op.(map[string]any)
			bodies := map[string]any{"request": op["requestBody"]}
			for status, answer := range op["responses"].(map[string]any) {
				bodies[status] = answer
			}
			for what, body := range bodies {
				body, _ := body.(map[string]any)
				content, _ := body["content"].(map[string]any)
				for media, m := range content {
					at := fmt.Sprintf("%s %s %s %s", method, path, what, media)
					schema := m.(map[string]any)["schema"].(map[string]any)
					walk(at, schema)
					alternatives, _ := schema["oneOf"].([]any)
					for _, alt := range append(alternatives, schema) {
						alt := alt.(map[string]any)
						if ref, _ := alt["$ref"].(string); strings.HasPrefix(ref, "#/components/schemas/Encrypted") && alt["x-amsg-plaintext"] == nil {
							t.Errorf("%s: sealed, without x-amsg-plaintext to say what it seals", at)
						}
					}
					events, _ := m.(map[string]any)["x-amsg-events"].(map[string]any)
					for name, e := range events {
						walk(at+" event "+name, e.(map[string]any)["schema"].(map[string]any))
					}
				}
			}
		}
	}
}
