package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"amsg/llm"
	"amsg/push"
	"amsg/push/errcode"
	"amsg/store"
)

// credentialsFeature stores a user's LLM credentials once, for tasks to
// name by reference (credRefs) instead of each carrying a copy: PUT
// /llm-credentials writes a batch, GET lists ids and times (never values),
// DELETE removes named ones, all, or those under an id prefix. Bodies are
// encrypted like every write of user data; values are sealed at rest.
func (s *Server) credentialsFeature() feature {
	return feature{
		capabilities: []string{"llm-credentials", "llm-credentials-delete-prefix"},
		routes: []route{
			{http.MethodPut, "llm-credentials", authClient, s.handlePutCredentials},
			{http.MethodGet, "llm-credentials", authClient, s.handleGetCredentials},
			{http.MethodDelete, "llm-credentials", authClient, s.handleDeleteCredentials},
		},
	}
}

var (
	errCredentialsNotArray = invalidFields(errcode.CredentialsNotArray, "credentials")
	errCredentialsBatch    = invalidFields(errcode.CredentialsBatchOver.With(store.MaxCredentialBatch), "credentials")
	errCredDeleteTarget    = invalidFields(errcode.CredDeleteTarget, "credIds")
	errCredDeleteSeveral   = invalidFields(errcode.CredDeleteSeveral, "all", "credIds", "credIdPrefix")
)

func credIDError(field string) *Error {
	return invalidFields(errcode.CredIDInvalid.With(field, store.MaxCredIDLen), field)
}

func (s *Server) handlePutCredentials(w http.ResponseWriter, r *http.Request) error {
	userID, payload, err := s.decryptRequest(w, r)
	if err != nil {
		return err
	}
	entries, err := decodeCredentials(payload)
	if err != nil {
		return err
	}
	checked := map[string]bool{} // a batch usually names one endpoint many times
	for i, e := range entries {
		if checked[e.Value.APIURL] {
			continue
		}
		checked[e.Value.APIURL] = true
		if err := s.checkAPIURL(r.Context(), e.Value.APIURL); err != nil {
			var apiErr *Error
			if errors.As(err, &apiErr) && apiErr.Code == errcode.InvalidAPIURL.Code() {
				return apiErr.withDetails(map[string]any{"invalidFields": []string{fmt.Sprintf("credentials[%d].value.apiUrl", i)}})
			}
			return err
		}
	}
	upserted, err := s.deps.Store.PutLLMCredentials(r.Context(), userID, entries)
	err = ownerWriteError(err)
	var limit *store.CredentialLimitError
	if errors.As(err, &limit) {
		return fail(errcode.CredentialsLimitOf.With(store.MaxCredentials)).
			withDetails(map[string]int{"existing": limit.Existing, "adding": limit.Adding, "limit": store.MaxCredentials})
	}
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, struct {
		Upserted int `json:"upserted"`
	}{upserted})
	return nil
}

// decodeCredentials reads PUT /llm-credentials' {credentials: [{credId,
// value: {apiUrl, apiKey, primaryModel}}]} with upstream's checks, in its
// order; the first failure fails the request.
func decodeCredentials(payload json.RawMessage) ([]store.CredentialEntry, error) {
	var body struct {
		Credentials []json.RawMessage `json:"credentials"`
	}
	if json.Unmarshal(payload, &body) != nil || len(body.Credentials) == 0 {
		return nil, errCredentialsNotArray
	}
	if len(body.Credentials) > store.MaxCredentialBatch {
		return nil, errCredentialsBatch
	}
	entries := make([]store.CredentialEntry, len(body.Credentials))
	for i, raw := range body.Credentials {
		f := decodeFields(raw)
		credID, ok := f.str("credId")
		if push.JSONKind(raw) != '{' || !ok || store.CheckCredID(credID) != nil {
			return nil, credIDError(fmt.Sprintf("credentials[%d].credId", i))
		}
		value, problem := decodeCredentialValue(f["value"])
		if problem != nil {
			return nil, invalidFields(errcode.CredentialValueInvalid.With(i, problem.Chinese()), fmt.Sprintf("credentials[%d].value", i))
		}
		owner, err := decodeOwnerClaim(decodeObject(raw))
		if err != nil {
			return nil, err
		}
		entries[i] = store.CredentialEntry{CredID: credID, Value: value, Owner: owner}
	}
	return entries, nil
}

// decodeCredentialValue checks one value: an object whose apiUrl, apiKey
// and primaryModel are non-empty strings of at most
// store.MaxCredentialFieldLen, apiUrl a chat-completions URL as an inline
// one must be. It returns what is wrong, or "".
func decodeCredentialValue(raw json.RawMessage) (store.LLMCredential, *errcode.Message) {
	if push.JSONKind(raw) != '{' {
		return store.LLMCredential{}, errcode.CredValueNotObject
	}
	f := decodeFields(raw)
	var v store.LLMCredential
	for _, field := range []struct {
		name string
		dst  *string
	}{{"apiUrl", &v.APIURL}, {"apiKey", &v.APIKey}, {"primaryModel", &v.PrimaryModel}} {
		s, ok := f.str(field.name)
		switch {
		case !ok || s == "":
			return v, errcode.CredValueFieldBlank.With(field.name)
		case push.JSLength(s) > store.MaxCredentialFieldLen:
			return v, errcode.CredValueFieldLong.With(field.name, store.MaxCredentialFieldLen)
		}
		*field.dst = s
	}
	if _, err := llm.NormalizeAPIURL(v.APIURL); err != nil {
		return v, errcode.CredValueAPIURL.With(err.Error())
	}
	return v, nil
}

func (s *Server) handleGetCredentials(w http.ResponseWriter, r *http.Request) error {
	userID, err := requireUserID(r)
	if err != nil {
		return err
	}
	list, err := s.deps.Store.LLMCredentials(r.Context(), userID)
	if err != nil {
		return err
	}
	type credentialJSON struct {
		CredID    string `json:"credId"`
		UpdatedAt int64  `json:"updatedAt"`
	}
	out := make([]credentialJSON, len(list))
	for i, c := range list {
		out[i] = credentialJSON(c)
	}
	writeData(w, http.StatusOK, struct {
		Credentials []credentialJSON `json:"credentials"`
	}{out})
	return nil
}

// credentialDeletion is a decoded DELETE /llm-credentials: exactly one of
// its fields is set.
type credentialDeletion struct {
	all    bool
	ids    []string
	prefix string
}

func (s *Server) handleDeleteCredentials(w http.ResponseWriter, r *http.Request) error {
	userID, payload, err := s.decryptRequest(w, r)
	if err != nil {
		return err
	}
	d, err := decodeCredentialDeletion(payload)
	if err != nil {
		return err
	}
	deleted, err := s.deleteCredentials(r.Context(), userID, d)
	if err != nil {
		return err
	}
	return writeDeleted(w, deleted)
}

func (s *Server) deleteCredentials(ctx context.Context, userID string, d credentialDeletion) (int, error) {
	switch {
	case d.all:
		return s.deps.Store.DeleteAllLLMCredentials(ctx, userID)
	case d.prefix != "":
		return s.deps.Store.DeleteLLMCredentialsWithPrefix(ctx, userID, d.prefix)
	}
	return s.deps.Store.DeleteLLMCredentials(ctx, userID, d.ids)
}

// decodeCredentialDeletion reads {credIds} | {all: true} | {credIdPrefix}:
// exactly one of them (all: false counts as absent), ids and prefix valid
// cred_ids, at most store.MaxCredentials ids.
func decodeCredentialDeletion(payload json.RawMessage) (credentialDeletion, error) {
	f := decodeFields(payload)
	var d credentialDeletion
	d.all = string(f["all"]) == "true"
	hasIDs, hasPrefix := f.has("credIds"), f.has("credIdPrefix")
	switch n := btoi(d.all) + btoi(hasIDs) + btoi(hasPrefix); {
	case n == 0:
		return d, errCredDeleteTarget
	case n > 1:
		return d, errCredDeleteSeveral
	}
	switch {
	case hasPrefix:
		prefix, ok := f.str("credIdPrefix")
		if !ok || store.CheckCredID(prefix) != nil {
			return d, credIDError("credIdPrefix")
		}
		d.prefix = prefix
	case hasIDs:
		var items []json.RawMessage
		if json.Unmarshal(f["credIds"], &items) != nil || len(items) == 0 {
			return d, errCredDeleteTarget
		}
		if len(items) > store.MaxCredentials {
			return d, invalidFields(errcode.CredIDsOver.With(store.MaxCredentials), "credIds")
		}
		for i, item := range items {
			id, ok := push.JSONString(item)
			if !ok || store.CheckCredID(id) != nil {
				return d, credIDError(fmt.Sprintf("credIds[%d]", i))
			}
			d.ids = append(d.ids, id)
		}
	}
	return d, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
