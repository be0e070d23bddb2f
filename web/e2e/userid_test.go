package e2e_test

import (
	"strconv"
	"testing"

	"amsg/web/browsertest"
)

// TestUseAnotherUserID replaces the user id in Settings: a malformed id is
// refused with the form's message and leaves the stored id alone; a valid
// one is stored in lower case.
func TestUseAnotherUserID(t *testing.T) {
	srv := newServer(t)
	b := browsertest.New(t, browsertest.Config{})
	p := b.NewPage()
	p.Navigate(srv.URL + "/#/settings")
	p.WaitFor(`document.querySelector('.use-other form') !== null`)
	before := userID(t, p)

	submit := func(id string) {
		p.Eval(`(() => {
			document.getElementById('toast').textContent = '';
			const form = document.querySelector('.use-other form');
			form.querySelector('input').value = `+strconv.Quote(id)+`;
			form.requestSubmit();
			return true;
		})()`, nil)
		p.WaitFor(`document.getElementById('toast').textContent !== ''`)
	}

	submit("not-an-id")
	var toast struct {
		Text  string `json:"text"`
		Error bool   `json:"error"`
	}
	p.Eval(`(() => { const el = document.getElementById('toast'); return { text: el.textContent, error: el.classList.contains('error') }; })()`, &toast)
	if want := "That is not a valid id (a UUID v4 such as 123e4567-e89b-42d3-a456-426614174000)."; toast.Text != want || !toast.Error {
		t.Errorf("toast %+v, want the error %q", toast, want)
	}
	if got := userID(t, p); got != before {
		t.Errorf("user id after a refused id: %q, want %q", got, before)
	}

	submit("123E4567-E89B-42D3-A456-426614174000")
	p.Eval(`(() => { const el = document.getElementById('toast'); return { text: el.textContent, error: el.classList.contains('error') }; })()`, &toast)
	if want := "This browser now uses that id."; toast.Text != want || toast.Error {
		t.Errorf("toast %+v, want %q", toast, want)
	}
	if got, want := userID(t, p), "123e4567-e89b-42d3-a456-426614174000"; got != want {
		t.Errorf("user id %q, want %q", got, want)
	}
}
