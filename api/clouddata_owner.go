package api

import (
	"encoding/json"
	"errors"
	"math"

	"amsg/push"
	"amsg/push/errcode"
	"amsg/store"
)

// The owner guard of ordinary writes: a task, a client-state entry (and a
// credential) may say who it belongs to, {owner:{type,id,label?}, kind,
// ownerGeneration}. The store checks the generation in the write's own
// transaction; a write for a retired owner, or with a generation from
// before a restore, is refused whole and writes nothing.

var (
	errInvalidOwnerGeneration = fail(errcode.InvalidOwnerGeneration)
	errInvalidCloudKind       = fail(errcode.InvalidCloudKind.With(store.MaxOwnerKindLen))
	errCloudOwnerRetired      = fail(errcode.CloudOwnerRetired)
	errCloudOwnerImmutable    = fail(errcode.CloudOwnerImmutable)
)

// decodeOwnerClaim reads owner, kind and ownerGeneration from a write's
// fields (decodeObject's values); null is absent. It returns nil when the
// write names none of them.
func decodeOwnerClaim(fields map[string]any) (*store.OwnerClaim, error) {
	var claim store.OwnerClaim
	named := false
	if v := fields["owner"]; v != nil {
		owner, ok := decodeOwner(v)
		if !ok {
			return nil, errInvalidCloudOwner
		}
		claim.Owner, named = &owner, true
	}
	if v := fields["kind"]; v != nil {
		kind, ok := v.(string)
		if !ok || push.JSLength(kind) > store.MaxOwnerKindLen {
			return nil, errInvalidCloudKind
		}
		claim.Kind, named = kind, true
	}
	if v := fields["ownerGeneration"]; v != nil {
		n, ok := v.(json.Number)
		f, err := n.Float64()
		if !ok || err != nil || f != math.Trunc(f) || f < 0 || f > maxSafeInteger {
			return nil, errInvalidOwnerGeneration
		}
		claim.Generation, named = int64(f), true
	}
	if !named {
		return nil, nil
	}
	return &claim, nil
}

// ownerWriteError maps the owner guard's refusals of a write.
func ownerWriteError(err error) error {
	switch {
	case errors.Is(err, store.ErrOwnerRetired):
		return errCloudOwnerRetired
	case errors.Is(err, store.ErrOwnerImmutable):
		return errCloudOwnerImmutable
	}
	return err
}
