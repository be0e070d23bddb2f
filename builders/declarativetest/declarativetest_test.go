package declarativetest

import "testing"

func TestParse(t *testing.T) {
	// The specification's example, unknown members ignored.
	m, err := Parse([]byte(`{"web_push":8030,"notification":{"title":"Ada emailed","lang":"en-US","body":"Did you hear?","navigate":"https://email.example/message/12"},"mutable":true,"x":1}`))
	if err != nil || m.Title != "Ada emailed" || m.Body != "Did you hear?" || m.Navigate.String() != "https://email.example/message/12" || !m.Mutable {
		t.Fatalf("%+v %v", m, err)
	}
	for _, bad := range []string{
		``, `[]`, `8030`, `{"notification":{"title":"t","navigate":"/"}}`,
		`{"web_push":"8030","notification":{"title":"t","navigate":"/"}}`,
		`{"web_push":8031,"notification":{"title":"t","navigate":"/"}}`,
		`{"web_push":8030}`, `{"web_push":8030,"notification":"t"}`,
		`{"web_push":8030,"notification":{"navigate":"/"}}`,
		`{"web_push":8030,"notification":{"title":7,"navigate":"/"}}`,
		`{"web_push":8030,"notification":{"title":"t"}}`,
		`{"web_push":8030,"notification":{"title":"t","navigate":"https://[bad"}}`,
		`{"web_push":8030,"notification":{"title":"t","navigate":"/","body":null}}`,
		`{"web_push":8030,"notification":{"title":"t","navigate":"https://a.example/","renotify":true}}`,
		`{"web_push":8030,"notification":{"title":"","navigate":"https://a.example/"}}`,
		`{"web_push":8030,"notification":{"title":"t","navigate":"/relative"}}`,
		`{"web_push":8030,"notification":{"title":"t","navigate":"https://a.example/","icon":"/i.png"}}`,
		`{"web_push":8030,"notification":{"title":"t","navigate":"https://a.example/","mutable":"yes"}}`,
	} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("%s parsed", bad)
		}
	}
}

func TestMutableInsideNotification(t *testing.T) {
	m, err := Parse([]byte(`{"web_push":8030,"notification":{"title":"t","navigate":"https://a.example/","mutable":true}}`))
	if err != nil || !m.Mutable {
		t.Fatalf("%+v %v", m, err)
	}
}
