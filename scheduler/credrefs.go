package scheduler

import (
	"context"
	"errors"
	"fmt"

	"amsg/push/errcode"
)

// errCredentialMissing is the failure of an occurrence whose credRefs.chat
// names a credential the user no longer has (and the task has no inline
// credentials to fall back on), CREDENTIAL_MISSING in its lastError. It is
// retried: a new PUT /llm-credentials repairs it.
var errCredentialMissing = errors.New(errcode.CredentialMissing.Code())

// ChatCredRef is the cred_id a payload's credRefs names for the fire's LLM
// call, or "".
func (p Payload) ChatCredRef() string { return p.CredRefs["chat"] }

// resolveCredentials puts the credential credRefs.chat names into p, read
// now, so a rotated key reaches every pending task: the stored credential,
// else the task's inline credentials, else errCredentialMissing. A payload
// without credRefs.chat is left as it is.
func (s *Scheduler) resolveCredentials(ctx context.Context, userID string, p *Payload) error {
	ref := p.ChatCredRef()
	if ref == "" {
		return nil
	}
	cred, ok, err := s.deps.Store.LLMCredential(ctx, userID, ref)
	switch {
	case err != nil:
		return err
	case ok:
		p.APIURL, p.APIKey, p.PrimaryModel = &cred.APIURL, &cred.APIKey, &cred.PrimaryModel
		return nil
	case deref(p.APIURL) != "" && deref(p.APIKey) != "" && deref(p.PrimaryModel) != "":
		return nil
	}
	return fmt.Errorf("%w: %s", errCredentialMissing, errcode.CredentialNamedMissing.With(ref).English())
}
