package scheduler

import (
	"context"
	"errors"
	"fmt"
)

// CodeCredentialMissing is the lastError code of an occurrence whose
// credRefs.chat names a credential the user no longer has (and the task
// has no inline credentials to fall back on). It is retried: a new PUT
// /llm-credentials repairs it.
const CodeCredentialMissing = "CREDENTIAL_MISSING"

// errCredentialMissing is CodeCredentialMissing's failure.
var errCredentialMissing = errors.New(CodeCredentialMissing)

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
	return fmt.Errorf("%w: credential %q does not exist (PUT /llm-credentials repairs the next retry)", errCredentialMissing, ref)
}
