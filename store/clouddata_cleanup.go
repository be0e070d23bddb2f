package store

import (
	"cmp"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"time"

	"amsg/push/errcode"
	"amsg/store/usercrypt"
)

// Cleanup of a user's cloud data, upstream's two steps: a plan previews what
// would go (15 minutes to act on it), an operation started from the plan
// with an idempotency key deletes it. Unlike upstream's 25-resource batches
// continued by cron, an operation deletes its whole plan in one
// transaction, checking each resource's version in it: all goes or nothing
// does. An attempt that fails for the database is retried by housekeeping
// (ContinueCleanups) with backoff; a plan that no longer matches the rows
// fails the operation for good and deletes nothing. Inventory snapshots,
// plans and operations are cloud_records rows, sealed with the user key.

// Timings and bounds of cleanup, upstream's.
const (
	// PlanTTL is how long a plan or an inventory snapshot can be used.
	PlanTTL = 15 * time.Minute
	// recordTTL is when an unused plan or snapshot is reclaimed, and
	// finishedOperationTTL when a finished operation is.
	recordTTL            = time.Hour
	finishedOperationTTL = 30 * 24 * time.Hour
	// maxOperationAttempts failed attempts fail an operation for good;
	// each waits 30 s × 2^attempts, at most maxOperationBackoff.
	maxOperationAttempts = 8
	maxOperationBackoff  = time.Hour
	// continueBatch bounds the operations one housekeeping pass continues.
	continueBatch = 25
	// MaxIdempotencyKeyLen bounds an operation's idempotency key.
	MaxIdempotencyKeyLen = 200
	// MaxCleanupResourceIDs bounds the resources one purge plan names.
	MaxCleanupResourceIDs = 1000
	// maxLiveRecords bounds the snapshots, and the plans, a user keeps:
	// a new one beyond it replaces the oldest, so repeated reads cannot
	// fill the database before recordTTL reclaims them.
	maxLiveRecords = 8
)

// Errors of cleanup; the api maps each to upstream's code.
var (
	ErrCloudCursorInvalid       = errors.New("store: invalid inventory cursor")
	ErrCloudCursorExpired       = errors.New("store: the inventory snapshot expired or its filter changed")
	ErrCloudRecordNotFound      = errors.New("store: no such cloud-data record")
	ErrCloudInventoryIncomplete = errors.New("store: the inventory is incomplete")
	ErrCloudResourceNotFound    = errors.New("store: a selected resource does not exist or is out of scope")
	ErrCloudPlanExpired         = errors.New("store: the cleanup plan expired")
	ErrCloudPlanChanged         = errors.New("store: the data changed since the plan")
	ErrCloudOwnerChanged        = errors.New("store: the owner changed during its retirement")
	ErrIdempotencyConflict      = errors.New("store: the idempotency key was used for another plan")
	ErrRetirementNotConfirmed   = errors.New("store: the owner's retirement is not confirmed yet")
)

// Cleanup modes.
const (
	ModePurge       = "purge"
	ModeRetireOwner = "retire-owner"
)

// Operation statuses.
const (
	OperationPending   = "pending"
	OperationCompleted = "completed"
	OperationFailed    = "failed"
)

// ResourceFilter narrows an inventory page: a type and/or an owner.
type ResourceFilter struct {
	Type      string `json:"type,omitempty"`
	OwnerType string `json:"ownerType,omitempty"`
	OwnerID   string `json:"ownerId,omitempty"`
}

func (f ResourceFilter) match(r Resource) bool {
	return (f.Type == "" || r.Type == f.Type) &&
		(f.OwnerID == "" || r.Owner != nil && r.Owner.Type == f.OwnerType && r.Owner.ID == f.OwnerID)
}

// TypeCount is one type's line of a summary.
type TypeCount struct {
	Type     string `json:"type"`
	Count    int    `json:"count"`
	ByteSize int64  `json:"byteSize"`
}

// CloudSummary counts an inventory by type.
type CloudSummary struct {
	Total    int         `json:"total"`
	Counts   []TypeCount `json:"counts"`
	Complete bool        `json:"complete"`
	Gaps     []CloudGap  `json:"gaps"`
}

// Summary counts inv by type, every type listed.
func (inv Inventory) Summary() CloudSummary {
	sum := CloudSummary{Total: len(inv.Resources), Complete: inv.Complete, Gaps: emptyIfNil(inv.Gaps)}
	for _, t := range resourceTypes {
		c := TypeCount{Type: t.name}
		for _, r := range inv.Resources {
			if r.Type == t.name {
				c.Count++
				c.ByteSize += r.ByteSize
			}
		}
		sum.Counts = append(sum.Counts, c)
	}
	return sum
}

func emptyIfNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// ResourcePage is one page of GET /cloud-data/resources.
type ResourcePage struct {
	Resources  []Resource    `json:"resources"`
	NextCursor *string       `json:"nextCursor"`
	Complete   bool          `json:"complete"`
	Gaps       []CloudGap    `json:"gaps"`
	Summary    *CloudSummary `json:"summary,omitempty"`
}

// snapshot is a stored inventory a cursor pages through.
type snapshot struct {
	ID        string         `json:"id"`
	Filter    ResourceFilter `json:"filter"`
	ExpiresAt int64          `json:"expiresAt"`
	Resources []Resource     `json:"resources"`
	Complete  bool           `json:"complete"`
	Gaps      []CloudGap     `json:"gaps"`
	Summary   CloudSummary   `json:"summary"`
}

// cursorPattern is upstream's cursor: a snapshot id and an offset.
var cursorPattern = regexp.MustCompile(`^([0-9a-f-]{36}):([0-9]{1,9})$`)

// CloudResourcePage returns limit resources of userID matching filter.
// Without a cursor it takes a new snapshot of the inventory, which the
// returned cursor pages through for PlanTTL; a cursor must come with the
// filter it was made with (ErrCloudCursorExpired), and one this store did
// not write is ErrCloudCursorInvalid.
func (s *Store) CloudResourcePage(ctx context.Context, userID string, filter ResourceFilter, cursor string, limit int) (ResourcePage, error) {
	key := s.userKey(userID)
	var snap snapshot
	offset := 0
	if cursor != "" {
		m := cursorPattern.FindStringSubmatch(cursor)
		if m == nil {
			return ResourcePage{}, ErrCloudCursorInvalid
		}
		found, err := s.readRecord(ctx, s.reader, key, userID, "inventory", m[1], &snap)
		if err != nil {
			return ResourcePage{}, fmt.Errorf("store: cloud resources: %w", err)
		}
		offset, _ = strconv.Atoi(m[2])
		switch {
		case !found || offset > len(snap.Resources):
			return ResourcePage{}, ErrCloudCursorInvalid
		case snap.ExpiresAt < millis(s.now()) || snap.Filter != filter:
			return ResourcePage{}, ErrCloudCursorExpired
		}
	} else {
		inv, err := s.CloudInventory(ctx, userID)
		if err != nil {
			return ResourcePage{}, err
		}
		snap = snapshot{ID: newUUID(), Filter: filter, ExpiresAt: millis(s.now().Add(PlanTTL)),
			Resources: []Resource{}, Complete: inv.Complete, Gaps: emptyIfNil(inv.Gaps), Summary: inv.Summary()}
		for _, r := range inv.Resources {
			if filter.match(r) {
				snap.Resources = append(snap.Resources, r)
			}
		}
		err = s.write(ctx, func(tx *sql.Tx) error {
			return s.putLiveRecord(ctx, tx, key, userID, "inventory", snap.ID, snap)
		})
		if err != nil {
			return ResourcePage{}, fmt.Errorf("store: cloud resources: %w", err)
		}
	}
	end := min(offset+limit, len(snap.Resources))
	page := ResourcePage{Resources: snap.Resources[offset:end], Complete: snap.Complete, Gaps: snap.Gaps, Summary: &snap.Summary}
	if end < len(snap.Resources) {
		next := snap.ID + ":" + strconv.Itoa(end)
		page.NextCursor = &next
	}
	return page, nil
}

// PlanRequest is what POST /cloud-data/cleanup-plans asks for, checked by
// the caller: purge needs resource ids or an owner, types narrow it;
// retire-owner needs an owner and nothing else.
type PlanRequest struct {
	Mode        string
	Owner       *Owner
	ResourceIDs []string
	Types       []string
}

// PlanCount is one type's count in a plan.
type PlanCount struct {
	Type  string `json:"type"`
	Count int    `json:"count"`
}

// CleanupPlan is a preview of a cleanup, as upstream answers it (its
// impacts are the caller's to word).
type CleanupPlan struct {
	ID              string      `json:"id"`
	Mode            string      `json:"mode"`
	OwnerGeneration *int64      `json:"ownerGeneration"`
	Owner           *Owner      `json:"owner"`
	Resources       []Resource  `json:"resources"`
	Count           int         `json:"count"`
	Counts          []PlanCount `json:"counts"`
	ExpiresAt       int64       `json:"expiresAt"`
	Impacts         []string    `json:"impacts"`
	Complete        bool        `json:"complete"`
	Gaps            []CloudGap  `json:"gaps"`
}

// planRecord is a stored plan: the preview and where each resource is.
type planRecord struct {
	CleanupPlan
	Entries []inventoryEntry `json:"entries"`
}

// CreateCleanupPlan previews a cleanup of userID's data and stores the
// plan for PlanTTL. An incomplete inventory cannot be planned on
// (ErrCloudInventoryIncomplete); resource ids that are not all in the
// selection are ErrCloudResourceNotFound.
func (s *Store) CreateCleanupPlan(ctx context.Context, userID string, req PlanRequest) (CleanupPlan, error) {
	key := s.userKey(userID)
	var generation *int64
	if req.Mode == ModeRetireOwner {
		state, err := s.CloudOwner(ctx, userID, *req.Owner)
		if err != nil {
			return CleanupPlan{}, err
		}
		generation = &state.Generation
	}
	inv, err := s.CloudInventory(ctx, userID)
	if err != nil {
		return CleanupPlan{}, err
	}
	if !inv.Complete {
		return CleanupPlan{}, ErrCloudInventoryIncomplete
	}
	now := s.now()
	plan := planRecord{CleanupPlan: CleanupPlan{ID: newUUID(), Mode: req.Mode, OwnerGeneration: generation, Owner: req.Owner,
		Resources: []Resource{}, ExpiresAt: millis(now.Add(PlanTTL)), Impacts: []string{}, Complete: true, Gaps: []CloudGap{}}}
	selected := make(map[string]bool, len(req.ResourceIDs))
	for _, id := range req.ResourceIDs {
		selected[id] = true
	}
	for i, r := range inv.Resources {
		if (req.Owner == nil || r.Owner != nil && r.Owner.same(*req.Owner)) &&
			(req.ResourceIDs == nil || selected[r.ID]) &&
			(req.Types == nil || slices.Contains(req.Types, r.Type)) {
			plan.Resources = append(plan.Resources, r)
			plan.Entries = append(plan.Entries, inv.entries[i])
		}
	}
	if req.ResourceIDs != nil && len(selected) != len(plan.Entries) {
		return CleanupPlan{}, ErrCloudResourceNotFound
	}
	plan.Count = len(plan.Resources)
	for i, n := range countByType(plan.Entries) {
		plan.Counts = append(plan.Counts, PlanCount{resourceTypes[i].name, n})
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		return s.putLiveRecord(ctx, tx, key, userID, "plan", plan.ID, plan)
	})
	if err != nil {
		return CleanupPlan{}, fmt.Errorf("store: create cleanup plan: %w", err)
	}
	return plan.CleanupPlan, nil
}

// OperationCount is one type's progress in an operation.
type OperationCount struct {
	Type      string `json:"type"`
	Deleted   int    `json:"deleted"`
	Remaining int    `json:"remaining"`
	Failed    int    `json:"failed"`
}

// OperationError is why an operation's last attempt failed.
type OperationError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// CleanupOperation is a cleanup started from a plan, as upstream shows it.
type CleanupOperation struct {
	ID               string           `json:"id"`
	PlanID           string           `json:"planId"`
	IdempotencyKey   string           `json:"idempotencyKey"`
	Mode             string           `json:"mode"`
	Owner            *Owner           `json:"owner"`
	OwnerGeneration  *int64           `json:"ownerGeneration"`
	FencedGeneration *int64           `json:"fencedGeneration"`
	Status           string           `json:"status"`
	Counts           []OperationCount `json:"counts"`
	Errors           []OperationError `json:"errors"`
	CreatedAt        int64            `json:"createdAt"`
	UpdatedAt        int64            `json:"updatedAt"`
}

func (op CleanupOperation) finished() bool {
	return op.Status == OperationCompleted || op.Status == OperationFailed
}

// operationRecord is a stored operation: the public part, what is left to
// delete and its retry state.
type operationRecord struct {
	CleanupOperation
	Entries       []inventoryEntry `json:"entries"`
	Attempts      int              `json:"attempts"`
	NextAttemptAt int64            `json:"nextAttemptAt"`
}

// StartCleanup starts (or, for an idempotency key seen before, resumes) the
// operation of userID's plan planID and runs it. A key used for another
// plan is ErrIdempotencyConflict; a plan not found ErrCloudRecordNotFound,
// expired ErrCloudPlanExpired, and one the data or the owner has moved away
// from ErrCloudPlanChanged, all without deleting anything. A retirement
// that could not be carried out yet is ErrRetirementNotConfirmed: it stays
// pending and housekeeping retries it.
func (s *Store) StartCleanup(ctx context.Context, userID, planID, idempotencyKey string) (CleanupOperation, error) {
	key := s.userKey(userID)
	op, found, err := s.operationByIdempotency(ctx, s.reader, key, userID, idempotencyKey)
	if err != nil {
		return CleanupOperation{}, fmt.Errorf("store: start cleanup: %w", err)
	}
	if !found {
		if op, err = s.newOperation(ctx, key, userID, planID, idempotencyKey); err != nil {
			return CleanupOperation{}, err
		}
	}
	if op.PlanID != planID {
		return CleanupOperation{}, ErrIdempotencyConflict
	}
	if !op.finished() && op.NextAttemptAt <= millis(s.now()) {
		if op, err = s.advanceOperation(ctx, key, userID, op.ID); err != nil {
			return CleanupOperation{}, err
		}
	}
	if op.Mode == ModeRetireOwner && op.FencedGeneration == nil {
		return CleanupOperation{}, ErrRetirementNotConfirmed
	}
	return op.CleanupOperation, nil
}

// newOperation checks the plan still holds and stores a pending operation
// for it, consuming the plan.
func (s *Store) newOperation(ctx context.Context, key usercrypt.Key, userID, planID, idempotencyKey string) (operationRecord, error) {
	var plan planRecord
	found, err := s.readRecord(ctx, s.reader, key, userID, "plan", planID, &plan)
	if err == nil && !found {
		// A request with the same key may have consumed the plan since.
		var op operationRecord
		if op, found, err = s.operationByIdempotency(ctx, s.reader, key, userID, idempotencyKey); found {
			return op, nil
		}
	}
	switch {
	case err != nil:
		return operationRecord{}, fmt.Errorf("store: start cleanup: %w", err)
	case !found:
		return operationRecord{}, ErrCloudRecordNotFound
	case plan.ExpiresAt < millis(s.now()):
		return operationRecord{}, ErrCloudPlanExpired
	}
	if plan.Mode == ModeRetireOwner {
		state, err := s.CloudOwner(ctx, userID, *plan.Owner)
		if err != nil {
			return operationRecord{}, err
		}
		if state.Generation != *plan.OwnerGeneration {
			return operationRecord{}, ErrCloudPlanChanged
		}
	} else {
		inv, err := s.CloudInventory(ctx, userID)
		if err != nil {
			return operationRecord{}, err
		}
		if !inv.Complete {
			return operationRecord{}, ErrCloudInventoryIncomplete
		}
		if _, err := planTargets(inv, plan.Entries); err != nil {
			return operationRecord{}, err
		}
	}
	now := millis(s.now())
	op := operationRecord{CleanupOperation: CleanupOperation{ID: newUUID(), PlanID: plan.ID, IdempotencyKey: idempotencyKey,
		Mode: plan.Mode, Owner: plan.Owner, OwnerGeneration: plan.OwnerGeneration, Status: OperationPending,
		Errors: []OperationError{}, CreatedAt: now, UpdatedAt: now}, Entries: plan.Entries}
	for i, n := range countByType(plan.Entries) {
		op.Counts = append(op.Counts, OperationCount{Type: resourceTypes[i].name, Remaining: n})
	}
	var existing operationRecord
	err = s.write(ctx, func(tx *sql.Tx) error {
		var found bool
		var err error
		// A request with the same key may have got here first.
		if existing, found, err = s.operationByIdempotency(ctx, tx, key, userID, idempotencyKey); err != nil || found {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM cloud_records WHERE user_id = ? AND kind = 'plan' AND id = ?`, userID, plan.ID); err != nil {
			return err
		}
		return s.putRecord(ctx, tx, key, userID, "operation", op.ID, idempotencyKey, op, &now, 0)
	})
	if err != nil {
		return operationRecord{}, fmt.Errorf("store: start cleanup: %w", err)
	}
	if existing.ID != "" {
		return existing, nil
	}
	return op, nil
}

// planTargets returns the current entries of a purge plan's resources,
// ErrCloudPlanChanged when one changed since; resources gone already count
// as deleted and are left out.
func planTargets(inv Inventory, planned []inventoryEntry) ([]inventoryEntry, error) {
	current := make(map[string]inventoryEntry, len(inv.entries))
	for _, e := range inv.entries {
		current[e.ID] = e
	}
	var targets []inventoryEntry
	for _, e := range planned {
		cur, ok := current[e.ID]
		if !ok {
			continue
		}
		if cur.Version != e.Version {
			return nil, ErrCloudPlanChanged
		}
		targets = append(targets, cur)
	}
	return targets, nil
}

// advanceOperation runs one attempt of the operation id in one
// transaction: a retirement first fences the owner's generation, then every
// resource the owner has at that moment goes; a purge deletes its plan's
// resources if none changed. A failed attempt is recorded: for good when
// the plan no longer holds or after maxOperationAttempts, else pending with
// backoff.
func (s *Store) advanceOperation(ctx context.Context, key usercrypt.Key, userID, id string) (operationRecord, error) {
	var done operationRecord
	err := s.write(ctx, func(tx *sql.Tx) error {
		var op operationRecord
		found, err := s.readRecord(ctx, tx, key, userID, "operation", id, &op)
		if err != nil || !found || op.finished() {
			done = op
			return err
		}
		inv, err := s.inventory(ctx, tx, key, userID)
		if err != nil {
			return err
		}
		if !inv.Complete {
			return ErrCloudInventoryIncomplete
		}
		var targets []inventoryEntry
		if op.Mode == ModeRetireOwner {
			if targets, err = s.fenceOwner(ctx, tx, key, userID, &op, inv); err != nil {
				return err
			}
		} else if targets, err = planTargets(inv, op.Entries); err != nil {
			return err
		}
		for _, e := range targets {
			t, _ := findResourceType(e.Type)
			if err := t.remove(ctx, tx, userID, e.Ref); err != nil {
				return fmt.Errorf("%s: %w", e.Type, err)
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM cloud_owned WHERE user_id = ? AND type = ? AND ref = ?`, userID, e.Type, e.Ref); err != nil {
				return err
			}
		}
		// A purge's planned resources are all gone now, those gone before
		// included; a retirement counts what the owner had at the fence.
		deleted := op.Entries
		if op.Mode == ModeRetireOwner {
			deleted = targets
		}
		op.Counts = op.Counts[:0]
		for i, n := range countByType(deleted) {
			op.Counts = append(op.Counts, OperationCount{Type: resourceTypes[i].name, Deleted: n})
		}
		now := millis(s.now())
		op.Status, op.Errors, op.Entries, op.Attempts, op.UpdatedAt = OperationCompleted, []OperationError{}, nil, 0, now
		done = op
		return s.putRecord(ctx, tx, key, userID, "operation", op.ID, op.IdempotencyKey, op, nil, now+finishedOperationTTL.Milliseconds())
	})
	if err == nil {
		return done, nil
	}
	return s.recordFailedAttempt(ctx, key, userID, id, err)
}

// fenceOwner retires op's owner (once: a retried attempt finds it fenced)
// and returns every resource it owns now, outbox rows of its tasks
// included.
func (s *Store) fenceOwner(ctx context.Context, tx *sql.Tx, key usercrypt.Key, userID string, op *operationRecord, inv Inventory) ([]inventoryEntry, error) {
	state, err := s.ownerRow(ctx, tx, key, userID, ownerKey(key, *op.Owner))
	if err != nil {
		return nil, err
	}
	switch {
	case op.FencedGeneration == nil && state.Generation != *op.OwnerGeneration:
		return nil, ErrCloudPlanChanged
	case op.FencedGeneration == nil:
		fenced, err := s.setOwnerActive(ctx, tx, key, userID, *op.Owner, false)
		if err != nil {
			return nil, err
		}
		op.FencedGeneration = &fenced.Generation
	case !state.Retired || state.Generation != *op.FencedGeneration:
		return nil, ErrCloudOwnerChanged
	}
	var targets []inventoryEntry
	for i, r := range inv.Resources {
		if r.Owner != nil && r.Owner.same(*op.Owner) {
			targets = append(targets, inv.entries[i])
		}
	}
	return targets, nil
}

// recordFailedAttempt stores why an attempt of operation id failed.
func (s *Store) recordFailedAttempt(ctx context.Context, key usercrypt.Key, userID, id string, cause error) (operationRecord, error) {
	var op operationRecord
	err := s.write(ctx, func(tx *sql.Tx) error {
		found, err := s.readRecord(ctx, tx, key, userID, "operation", id, &op)
		if err != nil || !found || op.finished() {
			return err
		}
		now := s.now()
		op.Attempts++
		terminal := errors.Is(cause, ErrCloudPlanChanged) || errors.Is(cause, ErrCloudOwnerChanged) || op.Attempts >= maxOperationAttempts
		failed := errcode.CleanupRetrying
		switch {
		case errors.Is(cause, ErrCloudPlanChanged):
			failed = errcode.CleanupPlanChanged
		case errors.Is(cause, ErrCloudOwnerChanged):
			failed = errcode.CleanupOwnerChanged
		case errors.Is(cause, ErrCloudInventoryIncomplete):
			failed = errcode.CleanupInventoryIncomplete
		}
		op.Errors = []OperationError{{failed.Code(), failed.English()}}
		op.UpdatedAt = millis(now)
		next := &op.NextAttemptAt
		expires := int64(0)
		if terminal {
			op.Status, next, expires = OperationFailed, nil, millis(now.Add(finishedOperationTTL))
			for i := range op.Counts {
				op.Counts[i].Failed = op.Counts[i].Remaining
			}
		} else {
			op.NextAttemptAt = millis(now.Add(min(maxOperationBackoff, 30*time.Second<<op.Attempts)))
		}
		return s.putRecord(ctx, tx, key, userID, "operation", op.ID, op.IdempotencyKey, op, next, expires)
	})
	if err != nil {
		return operationRecord{}, fmt.Errorf("store: cleanup operation: %w (recording the attempt: %w)", cause, err)
	}
	s.log.WarnContext(ctx, "store: a cloud-data cleanup attempt failed", "userId", userID, "operation", id, "status", op.Status, "err", cause)
	return op, nil
}

// CleanupOperations returns userID's operations, newest first, and how
// many do not decrypt.
func (s *Store) CleanupOperations(ctx context.Context, userID string) ([]CleanupOperation, int, error) {
	ops, unreadable, err := s.readOperations(ctx, s.reader, s.userKey(userID), userID)
	if err != nil {
		return nil, 0, fmt.Errorf("store: cleanup operations: %w", err)
	}
	out := make([]CleanupOperation, len(ops))
	for i, op := range ops {
		out[i] = op.CleanupOperation
	}
	slices.SortStableFunc(out, func(a, b CleanupOperation) int { return cmp.Compare(b.CreatedAt, a.CreatedAt) })
	return out, unreadable, nil
}

// CleanupOperation returns userID's operation id (ErrCloudRecordNotFound).
func (s *Store) CleanupOperation(ctx context.Context, userID, id string) (CleanupOperation, error) {
	var op operationRecord
	found, err := s.readRecord(ctx, s.reader, s.userKey(userID), userID, "operation", id, &op)
	switch {
	case err != nil:
		return CleanupOperation{}, fmt.Errorf("store: cleanup operation: %w", err)
	case !found:
		return CleanupOperation{}, ErrCloudRecordNotFound
	}
	return op.CleanupOperation, nil
}

// ContinueCleanups runs the next attempt of operations whose backoff is
// over, at most continueBatch, and returns how many it ran. Housekeeping
// calls it, so an operation finishes with no browser open.
func (s *Store) ContinueCleanups(ctx context.Context) (int, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT user_id, id FROM cloud_records
		WHERE kind = 'operation' AND next_run_at IS NOT NULL AND next_run_at <= ? ORDER BY next_run_at LIMIT ?`,
		millis(s.now()), continueBatch)
	if err != nil {
		return 0, fmt.Errorf("store: continue cleanups: %w", err)
	}
	type due struct{ userID, id string }
	var dues []due
	for rows.Next() {
		var d due
		if err := rows.Scan(&d.userID, &d.id); err != nil {
			rows.Close()
			return 0, fmt.Errorf("store: continue cleanups: %w", err)
		}
		dues = append(dues, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("store: continue cleanups: %w", err)
	}
	var errs []error
	for _, d := range dues {
		if _, err := s.advanceOperation(ctx, s.userKey(d.userID), d.userID, d.id); err != nil {
			errs = append(errs, err)
		}
	}
	return len(dues), errors.Join(errs...)
}

// housekeepCloudData continues due cleanups, then prunes expired records
// and the ownership of deleted resources, and returns how many rows it
// pruned.
func (s *Store) housekeepCloudData(ctx context.Context) (int, error) {
	_, continueErr := s.ContinueCleanups(ctx)
	records, pruneErr := s.PruneCloudRecords(ctx)
	owned, sweepErr := s.sweepOwnership(ctx)
	return records + owned, errors.Join(continueErr, pruneErr, sweepErr)
}

// PruneCloudRecords deletes the snapshots and plans past recordTTL and the
// operations finished longer ago than finishedOperationTTL.
func (s *Store) PruneCloudRecords(ctx context.Context) (int, error) {
	return s.execCount(ctx, "prune cloud records", `DELETE FROM cloud_records WHERE expires_at IS NOT NULL AND expires_at <= ?`, millis(s.now()))
}

// putRecord stores a cloud record, sealed; nextRunAt nil and expiresAt 0
// store NULL.
func (s *Store) putRecord(ctx context.Context, tx *sql.Tx, key usercrypt.Key, userID, kind, id, idempotencyKey string, value any, nextRunAt *int64, expiresAt int64) error {
	data, err := json.Marshal(value)
	if err != nil {
		return err
	}
	var idem, expires any
	if idempotencyKey != "" {
		idem = idempotencyKey
	}
	if expiresAt != 0 {
		expires = expiresAt
	}
	now := millis(s.now())
	_, err = tx.ExecContext(ctx, `INSERT INTO cloud_records (user_id, kind, id, idempotency_key, data, next_run_at, expires_at, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (user_id, kind, id) DO UPDATE SET data = excluded.data, next_run_at = excluded.next_run_at,
			expires_at = excluded.expires_at, updated_at = excluded.updated_at`,
		userID, kind, id, idem, key.SealAtRest(data), nextRunAt, expires, now, now)
	return err
}

// putLiveRecord stores a snapshot or a plan for recordTTL, deleting the
// user's oldest of that kind beyond maxLiveRecords.
func (s *Store) putLiveRecord(ctx context.Context, tx *sql.Tx, key usercrypt.Key, userID, kind, id string, value any) error {
	if err := s.putRecord(ctx, tx, key, userID, kind, id, "", value, nil, millis(s.now().Add(recordTTL))); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM cloud_records WHERE user_id = ? AND kind = ? AND id NOT IN
		(SELECT id FROM cloud_records WHERE user_id = ? AND kind = ? ORDER BY id = ? DESC, created_at DESC LIMIT ?)`,
		userID, kind, userID, kind, id, maxLiveRecords)
	return err
}

// readRecord opens the cloud record (kind, id) of userID into v; found is
// false when there is none. A record that does not open is an error.
func (s *Store) readRecord(ctx context.Context, q querier, key usercrypt.Key, userID, kind, id string, v any) (found bool, err error) {
	var sealed string
	err = q.QueryRowContext(ctx, `SELECT data FROM cloud_records WHERE user_id = ? AND kind = ? AND id = ?`, userID, kind, id).Scan(&sealed)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	plaintext, err := key.OpenAtRest(sealed)
	if err != nil {
		return false, fmt.Errorf("%s %s does not decrypt: %w", kind, id, err)
	}
	return true, json.Unmarshal(plaintext, v)
}

func (s *Store) operationByIdempotency(ctx context.Context, q querier, key usercrypt.Key, userID, idempotencyKey string) (operationRecord, bool, error) {
	var id string
	err := q.QueryRowContext(ctx, `SELECT id FROM cloud_records WHERE user_id = ? AND idempotency_key = ?`, userID, idempotencyKey).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return operationRecord{}, false, nil
	}
	if err != nil {
		return operationRecord{}, false, err
	}
	var op operationRecord
	found, err := s.readRecord(ctx, q, key, userID, "operation", id, &op)
	return op, found, err
}

// readOperations reads userID's operations, counting those that do not
// decrypt.
func (s *Store) readOperations(ctx context.Context, q querier, key usercrypt.Key, userID string) ([]operationRecord, int, error) {
	rows, err := q.QueryContext(ctx, `SELECT data FROM cloud_records WHERE user_id = ? AND kind = 'operation'`, userID)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var ops []operationRecord
	unreadable := 0
	for rows.Next() {
		var sealed string
		if err := rows.Scan(&sealed); err != nil {
			return nil, 0, err
		}
		var op operationRecord
		plaintext, err := key.OpenAtRest(sealed)
		if err != nil || json.Unmarshal(plaintext, &op) != nil {
			unreadable++
			continue
		}
		ops = append(ops, op)
	}
	return ops, unreadable, rows.Err()
}

// newUUID returns a random UUID v4, the form of upstream's record ids.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
