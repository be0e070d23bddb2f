package store_test

import (
	"testing"

	"amsg/store"
	"amsg/store/storetest"
)

// TestLLMCredentialsPrefixCountsCharacters deletes by a prefix of
// multi-byte characters: the same rows on both backends, none of another
// user's.
func TestLLMCredentialsPrefixCountsCharacters(t *testing.T) {
	st := storetest.New(t)
	ctx := t.Context()
	value := store.LLMCredential{APIURL: "https://llm.example/v1", APIKey: "k", PrimaryModel: "m"}
	var entries []store.CredentialEntry
	for _, id := range []string{"角色:雪/chat", "角色:雪/vision", "角色:雪花/chat", "角色/chat", "global/chat"} {
		entries = append(entries, store.CredentialEntry{CredID: id, Value: value})
	}
	for _, user := range []string{"u1", "u2"} {
		if _, err := st.PutLLMCredentials(ctx, user, entries); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := st.DeleteLLMCredentialsWithPrefix(ctx, "u1", "角色:雪/"); err != nil || n != 2 {
		t.Fatalf("deleted %d (%v), want 2", n, err)
	}
	missing, err := st.MissingLLMCredentials(ctx, "u1", []string{"角色:雪/chat", "角色:雪花/chat", "角色:雪/chat", "global/chat"})
	if err != nil || len(missing) != 1 || missing[0] != "角色:雪/chat" {
		t.Errorf("missing = %v (%v), want [角色:雪/chat]", missing, err)
	}
	if list, _ := st.LLMCredentials(ctx, "u2"); len(list) != 5 {
		t.Errorf("the other user has %d credentials, want 5", len(list))
	}
	if _, err := st.DeleteLLMCredentialsWithPrefix(ctx, "u1", ""); err == nil {
		t.Error("an empty prefix was accepted")
	}
}
