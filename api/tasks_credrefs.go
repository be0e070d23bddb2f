package api

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"amsg/push"
	"amsg/push/errcode"
	"amsg/scheduler"
	"amsg/store"
)

// Bounds of a task's credRefs, upstream's.
const (
	maxCredRefs       = 16
	maxCredRefPurpose = 64
)

var errTaskUsesCredRefs = fail(errcode.TaskUsesCredRefs)

// decodeCredRefs reads a task's credRefs, {<purpose>: <credId>}: an object
// of 1 to maxCredRefs members, purposes of at most maxCredRefPurpose
// characters without control characters, valid cred_ids. base is the
// route's error for a bad value.
func decodeCredRefs(raw json.RawMessage, base *errcode.Message) (map[string]string, *Error) {
	var refs map[string]json.RawMessage
	if push.JSONKind(raw) != '{' || json.Unmarshal(raw, &refs) != nil {
		return nil, invalidFields(errcode.CredRefsNotObject.Under(base), "credRefs")
	}
	switch {
	case len(refs) == 0:
		return nil, invalidFields(errcode.CredRefsEmpty.Under(base), "credRefs")
	case len(refs) > maxCredRefs:
		return nil, invalidFields(errcode.CredRefsOver.With(maxCredRefs).Under(base), "credRefs")
	}
	out := make(map[string]string, len(refs))
	for purpose, v := range refs {
		if push.JSLength(purpose) > maxCredRefPurpose || strings.ContainsFunc(purpose, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return nil, invalidFields(errcode.CredRefPurposeInvalid.With(maxCredRefPurpose).Under(base), "credRefs")
		}
		id, ok := push.JSONString(v)
		if !ok || store.CheckCredID(id) != nil {
			return nil, invalidFields(errcode.CredRefIDInvalid.With(purpose, store.MaxCredIDLen).Under(base), "credRefs."+purpose)
		}
		out[purpose] = id
	}
	return out, nil
}

// hasInlineCredentials reports whether a request gives any of apiUrl,
// apiKey and primaryModel.
func hasInlineCredentials(f fields) bool {
	return slices.ContainsFunc(credentialKeys, f.truthy)
}

// credRefs is the schedule step for credRefs: its shape, and never
// together with inline credentials when it names the chat credential.
func (v *scheduleValidator) credRefs() *Error {
	if !v.f.given("credRefs") {
		return nil
	}
	refs, err := decodeCredRefs(v.f["credRefs"], errcode.InvalidParameters)
	if err != nil {
		return err
	}
	if refs["chat"] != "" && hasInlineCredentials(v.f) {
		return invalidFields(errcode.CredRefsOrInline, "credRefs", "apiUrl", "apiKey", "primaryModel")
	}
	v.req.payload.CredRefs = refs
	return nil
}

// chatCredRef reports whether the request names the chat credential, which
// stands in for the inline credentials.
func (v *scheduleValidator) chatCredRef() bool {
	chat, _ := push.JSONString(decodeFields(v.f["credRefs"])["chat"])
	return chat != ""
}

// requireCredentials answers 409 CREDENTIAL_NOT_FOUND naming the first of
// refs the user has no credential under.
func (s *Server) requireCredentials(ctx context.Context, userID string, refs map[string]string) error {
	if len(refs) == 0 {
		return nil
	}
	ids := make([]string, 0, len(refs))
	for _, purpose := range slices.Sorted(maps.Keys(refs)) {
		ids = append(ids, refs[purpose])
	}
	missing, err := s.deps.Store.MissingLLMCredentials(ctx, userID, ids)
	if err != nil || len(missing) == 0 {
		return err
	}
	return fail(errcode.CredentialNamed.With(missing[0])).
		withDetails(map[string]any{"credId": missing[0], "missingCredIds": missing})
}

// updateCredRefs reads an update's credRefs (nil when it gives none), with
// the schedule's rules.
func updateCredRefs(f *updateFields) (map[string]string, error) {
	if !f.given("credRefs") {
		return nil, nil
	}
	refs, err := decodeCredRefs(f.fields["credRefs"], errcode.InvalidUpdateData)
	if err != nil {
		return nil, err
	}
	if refs["chat"] != "" && hasInlineCredentials(f.fields) {
		return nil, invalidUpdate(errcode.CredRefsOrInline, "credRefs", "apiUrl", "apiKey", "primaryModel")
	}
	return refs, nil
}

// mergeCredRefs applies an update's credentials to a stored payload: new
// refs replace the old; inline credentials for a task whose chat
// credential is a reference are refused (409 TASK_USES_CRED_REFS), since
// the reference would win at every fire.
func mergeCredRefs(p *scheduler.Payload, f *updateFields, refs map[string]string) error {
	if refs != nil {
		p.CredRefs = refs
	}
	if p.ChatCredRef() != "" && hasInlineCredentials(f.fields) {
		return errTaskUsesCredRefs
	}
	return nil
}

// withCredRefs adds credRefs to the keys an update stored, in the order
// they were sent.
func withCredRefs(stored []string, f *updateFields) []string {
	kept := map[string]bool{"credRefs": true}
	for _, k := range stored {
		kept[k] = true
	}
	return slices.DeleteFunc(slices.Clone(f.keys), func(k string) bool { return !kept[k] })
}
