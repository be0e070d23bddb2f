package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"amsg/push/errcode"
	"amsg/store/usercrypt"
)

// The inventory reads the rows themselves, never a directory of them: each
// resource type is one entry of resourceTypes, a lister of the user's
// resources of that type and a remover of one of them, both run inside the
// caller's transaction. Adding a table to what a user can see and delete is
// adding an entry. Responses carry sizes and labels, never values, keys or
// endpoints.

// MaxResourcesPerType bounds one type's resources in an inventory; a user
// with more gets an incomplete inventory (a gap), which plans refuse.
const MaxResourcesPerType = 5000

// Resource is one thing stored for a user, as upstream's inventory shows it.
type Resource struct {
	ID    string `json:"id"`
	Type  string `json:"type"`
	Owner *Owner `json:"owner"`
	Kind  string `json:"kind"`
	Label string `json:"label"`
	// ByteSize counts the stored bytes (sealed values as stored).
	ByteSize int64 `json:"byteSize"`
	// UpdatedAt is epoch ms, nil when the rows carry no time.
	UpdatedAt *int64  `json:"updatedAt"`
	Status    *string `json:"status"`
}

// MarshalJSON writes a missing kind as null, as upstream does.
func (r Resource) MarshalJSON() ([]byte, error) {
	type plain Resource
	return json.Marshal(struct {
		plain
		Kind *string `json:"kind"`
	}{plain(r), nonEmpty(r.Kind)})
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// CloudGap is a source the inventory could not read whole.
type CloudGap struct {
	Source  string `json:"source"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Inventory is every resource of a user, ordered by id.
type Inventory struct {
	Resources []Resource
	Complete  bool
	Gaps      []CloudGap
	// entries are the resources' private halves, by index.
	entries []inventoryEntry
}

// inventoryEntry is what a plan keeps of a resource to delete it later:
// where it is and the version it was seen at.
type inventoryEntry struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Ref     string `json:"ref"`
	Version string `json:"version"`
}

// storedResource is one resource as a type's lister reads it.
type storedResource struct {
	ref       string
	label     string
	byteSize  int64
	updatedAt int64 // epoch ms; 0 when unknown
	status    string
	// version changes whenever the resource's rows do.
	version string
	// taskUUID names the task whose owner an outbox row inherits.
	taskUUID string
}

// resourceType is one entry of the inventory.
type resourceType struct {
	name string
	// list reads userID's resources, at most limit.
	list func(ctx context.Context, tx *sql.Tx, userID string, limit int) ([]storedResource, error)
	// remove deletes the resource ref of userID (rows already gone are no
	// error).
	remove func(ctx context.Context, tx *sql.Tx, userID, ref string) error
	// owned, for a type whose writes may name an owner, selects a row when
	// the resource of the cloud_owned row at hand still exists, with
	// ownedArgs; housekeeping deletes the ownership of resources the
	// ordinary routes deleted.
	owned     string
	ownedArgs []any
}

// resourceTypes are upstream's five types in its order, then amsg's own.
var resourceTypes = []resourceType{
	{name: "task", list: listTasks, remove: removeTask,
		owned: `SELECT 1 FROM tasks t WHERE t.user_id = cloud_owned.user_id AND t.uuid = cloud_owned.ref`},
	{name: "state", list: listState, remove: removeState,
		owned: `SELECT 1 FROM client_state c WHERE c.user_id = cloud_owned.user_id AND c.namespace || ? || c.key = cloud_owned.ref`, ownedArgs: []any{stateSep}},
	{name: "credential", list: listCredentials, remove: removeCredential,
		owned: `SELECT 1 FROM llm_credentials c WHERE c.user_id = cloud_owned.user_id AND c.cred_id = cloud_owned.ref`},
	{name: "outbox", list: listOutbox, remove: removeOutbox},
	{name: "subscription", list: listSubscriptions, remove: removeSubscription},
	{name: "transcript", list: listTranscripts, remove: removeTranscript},
	{name: "delivery-log", list: listDeliveryLog, remove: removeDeliveryLog},
	{name: "preference", list: listPreferences, remove: removePreferences},
	{name: "idempotency-key", list: listIdempotencyKeys, remove: removeIdempotencyKey},
	{name: "interrupt", list: listInterrupts, remove: removeInterrupt},
}

// sweepOwnership deletes the ownership records whose resource is gone.
func (s *Store) sweepOwnership(ctx context.Context) (int, error) {
	deleted := 0
	for _, t := range resourceTypes {
		if t.owned == "" {
			continue
		}
		n, err := s.execCount(ctx, "sweep ownership", `DELETE FROM cloud_owned WHERE type = ? AND NOT EXISTS (`+t.owned+`)`, append([]any{t.name}, t.ownedArgs...)...)
		if err != nil {
			return deleted, err
		}
		deleted += n
	}
	return deleted, nil
}

// ResourceTypes names the inventory's resource types in order.
func ResourceTypes() []string {
	names := make([]string, len(resourceTypes))
	for i, t := range resourceTypes {
		names[i] = t.name
	}
	return names
}

// countByType counts entries of each type, in resourceTypes' order.
func countByType(entries []inventoryEntry) []int {
	counts := make([]int, len(resourceTypes))
	for _, e := range entries {
		if i := slices.IndexFunc(resourceTypes, func(t resourceType) bool { return t.name == e.Type }); i >= 0 {
			counts[i]++
		}
	}
	return counts
}

func findResourceType(name string) (resourceType, bool) {
	i := slices.IndexFunc(resourceTypes, func(t resourceType) bool { return t.name == name })
	if i < 0 {
		return resourceType{}, false
	}
	return resourceTypes[i], true
}

// resourceID is a resource's id on the wire: stable, opaque, and the same
// for the same rows however often the inventory is read.
func resourceID(userID, typ, ref string) string {
	sum := sha256.Sum256([]byte(userID + "\x00" + typ + "\x00" + ref))
	return hex.EncodeToString(sum[:])
}

// CloudInventory reads every resource of userID from one snapshot.
func (s *Store) CloudInventory(ctx context.Context, userID string) (Inventory, error) {
	tx, err := s.reader.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return Inventory{}, fmt.Errorf("store: cloud inventory: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	inv, err := s.inventory(ctx, tx, s.userKey(userID), userID)
	if err != nil {
		return Inventory{}, fmt.Errorf("store: cloud inventory: %w", err)
	}
	return inv, nil
}

// inventory reads userID's resources within tx, their owners from
// cloud_owned (an outbox row inherits its task's).
func (s *Store) inventory(ctx context.Context, tx *sql.Tx, key usercrypt.Key, userID string) (Inventory, error) {
	owned, unreadable, err := s.ownershipRecords(ctx, tx, key, userID)
	if err != nil {
		return Inventory{}, err
	}
	inv := Inventory{Complete: true}
	if unreadable > 0 {
		inv.Gaps = append(inv.Gaps, CloudGap{"ownership", errcode.UnreadableOwnership.Code(), errcode.UnreadableOwnership.With(unreadable).English()})
	}
	type indexed struct {
		Resource
		entry inventoryEntry
	}
	var all []indexed
	for _, t := range resourceTypes {
		rows, err := t.list(ctx, tx, userID, MaxResourcesPerType+1)
		if err != nil {
			return Inventory{}, fmt.Errorf("%s: %w", t.name, err)
		}
		if len(rows) > MaxResourcesPerType {
			rows = rows[:MaxResourcesPerType]
			inv.Gaps = append(inv.Gaps, CloudGap{t.name, errcode.TooManyResources.Code(), errcode.TooManyResources.With(MaxResourcesPerType).English()})
		}
		for _, r := range rows {
			meta := owned[t.name+"\x00"+r.ref]
			if r.taskUUID != "" && meta.Owner == nil {
				meta.Owner = owned["task\x00"+r.taskUUID].Owner
			}
			res := Resource{ID: resourceID(userID, t.name, r.ref), Type: t.name, Owner: meta.Owner, Kind: meta.Kind,
				Label: r.label, ByteSize: r.byteSize, Status: nonEmpty(r.status)}
			if r.updatedAt > 0 {
				res.UpdatedAt = &r.updatedAt
			}
			all = append(all, indexed{res, inventoryEntry{res.ID, t.name, r.ref, r.version}})
		}
	}
	slices.SortFunc(all, func(a, b indexed) int { return strings.Compare(a.ID, b.ID) })
	inv.Resources = make([]Resource, len(all))
	inv.entries = make([]inventoryEntry, len(all))
	for i, r := range all {
		inv.Resources[i], inv.entries[i] = r.Resource, r.entry
	}
	inv.Complete = len(inv.Gaps) == 0
	return inv, nil
}

// ownershipRecords reads userID's ownership records by type and ref.
func (s *Store) ownershipRecords(ctx context.Context, tx *sql.Tx, key usercrypt.Key, userID string) (map[string]OwnerClaim, int, error) {
	rows, err := tx.QueryContext(ctx, `SELECT type, ref, meta FROM cloud_owned WHERE user_id = ?`, userID)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	metas := map[string]OwnerClaim{}
	unreadable := 0
	for rows.Next() {
		var typ, ref, sealed string
		if err := rows.Scan(&typ, &ref, &sealed); err != nil {
			return nil, 0, err
		}
		var m OwnerClaim
		plaintext, err := key.OpenAtRest(sealed)
		if err != nil || json.Unmarshal(plaintext, &m) != nil {
			unreadable++
			continue
		}
		metas[typ+"\x00"+ref] = m
	}
	return metas, unreadable, rows.Err()
}

// scanResources runs query and reads each row with scan.
func scanResources(ctx context.Context, tx *sql.Tx, scan func(*sql.Rows) (storedResource, error), query string, args ...any) ([]storedResource, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []storedResource
	for rows.Next() {
		r, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func listTasks(ctx context.Context, tx *sql.Tx, userID string, limit int) ([]storedResource, error) {
	return scanResources(ctx, tx, func(rows *sql.Rows) (storedResource, error) {
		var r storedResource
		err := rows.Scan(&r.ref, &r.byteSize, &r.updatedAt, &r.status)
		r.label = r.ref
		r.version = fmt.Sprintf("%d/%s/%d", r.updatedAt, r.status, r.byteSize)
		return r, err
	}, `SELECT uuid, length(payload), updated_at, status FROM tasks WHERE user_id = ? ORDER BY id LIMIT ?`, userID, limit)
}

func removeTask(ctx context.Context, tx *sql.Tx, userID, ref string) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM tasks WHERE user_id = ? AND uuid = ?`, userID, ref)
	return err
}

// listState groups the rows of a chunked value with their root, as one
// value; slices without a root are listed as "orphan-chunks".
func listState(ctx context.Context, tx *sql.Tx, userID string, limit int) ([]storedResource, error) {
	rows, err := tx.QueryContext(ctx, `SELECT namespace, key, length(value), updated_at FROM client_state
		WHERE user_id = ? ORDER BY namespace, key`, userID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	byRef := map[string]*storedResource{}
	var order []string
	for rows.Next() {
		var namespace, key string
		var size, updatedAt int64
		if err := rows.Scan(&namespace, &key, &size, &updatedAt); err != nil {
			return nil, err
		}
		root := true
		if ns, ok := strings.CutPrefix(namespace, stateChunkNSPfx); ok {
			root = false
			namespace = ns
			if i := strings.LastIndex(key, stateSep); i >= 0 {
				key = key[:i]
			}
		}
		ref := stateRef(namespace, key)
		r := byRef[ref]
		if r == nil {
			if len(order) == limit {
				continue
			}
			r = &storedResource{ref: ref, label: namespace + "/" + key, status: "orphan-chunks"}
			byRef[ref] = r
			order = append(order, ref)
		}
		if root {
			r.status = ""
		}
		r.byteSize += size
		r.updatedAt = max(r.updatedAt, updatedAt)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]storedResource, len(order))
	for i, ref := range order {
		r := byRef[ref]
		r.version = fmt.Sprintf("%d/%d/%s", r.updatedAt, r.byteSize, r.status)
		out[i] = *r
	}
	return out, nil
}

func removeState(ctx context.Context, tx *sql.Tx, userID, ref string) error {
	namespace, key := splitStateRef(ref)
	if _, err := tx.ExecContext(ctx, `DELETE FROM client_state WHERE user_id = ? AND namespace = ? AND key = ?`, userID, namespace, key); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM client_state WHERE user_id = ? AND namespace = ? AND key > ? AND key < ?`,
		userID, stateChunkNSPfx+namespace, key+stateSep, key+stateSliceKeyStop)
	return err
}

func listOutbox(ctx context.Context, tx *sql.Tx, userID string, limit int) ([]storedResource, error) {
	return scanResources(ctx, tx, func(rows *sql.Rows) (storedResource, error) {
		var r storedResource
		var taskUUID sql.NullString
		var delivered, acked sql.NullInt64
		err := rows.Scan(&r.ref, &taskUUID, &r.byteSize, &r.updatedAt, &delivered, &acked)
		r.label, r.taskUUID = r.ref, taskUUID.String
		switch {
		case acked.Valid:
			r.status, r.updatedAt = "acked", max(r.updatedAt, acked.Int64)
		case delivered.Valid:
			r.status, r.updatedAt = "delivered", max(r.updatedAt, delivered.Int64)
		default:
			r.status = "pending"
		}
		r.version = fmt.Sprintf("%d/%s/%d", r.updatedAt, r.status, r.byteSize)
		return r, err
	}, `SELECT message_id, task_uuid, `+outboxSealedTextLength+`, created_at, delivered_at, acked_at FROM message_outbox
		WHERE user_id = ? ORDER BY id LIMIT ?`, userID, limit)
}

func removeOutbox(ctx context.Context, tx *sql.Tx, userID, ref string) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM message_outbox WHERE user_id = ? AND message_id = ?`, userID, ref)
	return err
}

// listSubscriptions lists the devices; the label never shows the endpoint.
func listSubscriptions(ctx context.Context, tx *sql.Tx, userID string, limit int) ([]storedResource, error) {
	return scanResources(ctx, tx, func(rows *sql.Rows) (storedResource, error) {
		var r storedResource
		var id int64
		var seen sql.NullInt64
		err := rows.Scan(&id, &r.byteSize, &r.updatedAt, &seen)
		r.ref, r.label, r.status = strconv.FormatInt(id, 10), "Web Push subscription", "registered"
		r.updatedAt = max(r.updatedAt, seen.Int64)
		r.version = fmt.Sprintf("%d/%d", r.updatedAt, r.byteSize)
		return r, err
	}, `SELECT id, length(subscription), updated_at, last_seen_at FROM subscriptions WHERE user_id = ? ORDER BY id LIMIT ?`, userID, limit)
}

func removeSubscription(ctx context.Context, tx *sql.Tx, userID, ref string) error {
	id, err := strconv.ParseInt(ref, 10, 64)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `DELETE FROM subscriptions WHERE user_id = ? AND id = ?`, userID, id)
	return err
}

func listTranscripts(ctx context.Context, tx *sql.Tx, userID string, limit int) ([]storedResource, error) {
	return scanResources(ctx, tx, func(rows *sql.Rows) (storedResource, error) {
		var r storedResource
		var lastSeq int64
		err := rows.Scan(&r.ref, &r.byteSize, &r.updatedAt, &lastSeq)
		r.label = "session " + r.ref
		r.version = fmt.Sprintf("%d/%d/%d", r.updatedAt, lastSeq, r.byteSize)
		return r, err
	}, `SELECT s.session_id, CAST(length(s.settings) + coalesce((SELECT sum(length(e.body)) FROM transcript_entries e WHERE e.session = s.id), 0) AS BIGINT),
		s.updated_at, s.last_seq FROM transcript_sessions s WHERE s.owner = ? ORDER BY s.id LIMIT ?`, userID, limit)
}

func removeTranscript(ctx context.Context, tx *sql.Tx, userID, ref string) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM transcript_sessions WHERE owner = ? AND session_id = ?`, userID, ref)
	return err
}

// listDeliveryLog shows the user's delivery log and its messages' events
// (their timelines) as one resource: their rows are attempts and what
// became of pushes, not things the user made.
func listDeliveryLog(ctx context.Context, tx *sql.Tx, userID string, _ int) ([]storedResource, error) {
	var attempts, events, size, eventBytes int64
	var last, eventsLast sql.NullInt64
	err := tx.QueryRowContext(ctx, `SELECT count(*), CAST(coalesce(sum(length(message_id) + length(push_host) + length(outcome) + length(error)), 0) AS BIGINT),
		max(at) FROM delivery_log WHERE user_id = ?`, userID).Scan(&attempts, &size, &last)
	if err != nil {
		return nil, err
	}
	err = tx.QueryRowContext(ctx, `SELECT CAST(coalesce(sum(`+eventsInRow+`), 0) AS BIGINT), CAST(coalesce(sum(`+eventBytesInRow+`), 0) AS BIGINT),
		max(`+eventLatestInRow+`) FROM (`+userEventsSQL(`type, queued_at, at, message_id, device_id, detail`)+`) e`,
		userID, userID).Scan(&events, &eventBytes, &eventsLast)
	if err != nil || attempts+events == 0 {
		return nil, err
	}
	size += eventBytes
	if eventsLast.Int64 > last.Int64 {
		last = eventsLast
	}
	return []storedResource{{ref: "all", label: fmt.Sprintf("delivery log (%d attempts, %d message events)", attempts, events), byteSize: size,
		updatedAt: last.Int64, version: fmt.Sprintf("%d/%d/%d", attempts, events, last.Int64)}}, nil
}

func removeDeliveryLog(ctx context.Context, tx *sql.Tx, userID, _ string) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM delivery_log WHERE user_id = ?`, userID); err != nil {
		return err
	}
	return deleteUserEventRows(ctx, tx, userID)
}

// listPreferences shows the user's preferences and the daily-limit slots
// its proactive pushes took as one resource: the slots mean nothing
// without the limit.
func listPreferences(ctx context.Context, tx *sql.Tx, userID string, _ int) ([]storedResource, error) {
	var hasRow, slots, size int64
	var updated, lastSlot sql.NullInt64
	err := tx.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM user_preferences WHERE user_id = ?),
		(SELECT max(updated_at) FROM user_preferences WHERE user_id = ?),
		(SELECT CAST(coalesce(sum(length(coalesce(time_zone, ''))), 0) AS BIGINT) FROM user_preferences WHERE user_id = ?),
		(SELECT count(*) FROM proactive_pushes WHERE user_id = ?),
		(SELECT max(created_at) FROM proactive_pushes WHERE user_id = ?)`,
		userID, userID, userID, userID, userID).Scan(&hasRow, &updated, &size, &slots, &lastSlot)
	if err != nil || hasRow+slots == 0 {
		return nil, err
	}
	var slotBytes int64
	if err := tx.QueryRowContext(ctx, `SELECT CAST(coalesce(sum(length(day) + length(push_key)), 0) AS BIGINT) FROM proactive_pushes WHERE user_id = ?`,
		userID).Scan(&slotBytes); err != nil {
		return nil, err
	}
	last := max(updated.Int64, lastSlot.Int64)
	return []storedResource{{ref: "all", label: fmt.Sprintf("preferences (%d daily-limit slots)", slots), byteSize: size + slotBytes,
		updatedAt: last, version: fmt.Sprintf("%d/%d/%d", hasRow, slots, last)}}, nil
}

func removePreferences(ctx context.Context, tx *sql.Tx, userID, _ string) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM user_preferences WHERE user_id = ?`, userID); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM proactive_pushes WHERE user_id = ?`, userID)
	return err
}

// listIdempotencyKeys lists the answers kept for the user's requests sent
// with an Idempotency-Key.
func listIdempotencyKeys(ctx context.Context, tx *sql.Tx, userID string, limit int) ([]storedResource, error) {
	return scanResources(ctx, tx, func(rows *sql.Rows) (storedResource, error) {
		var r storedResource
		var status sql.NullInt64
		err := rows.Scan(&r.ref, &r.byteSize, &r.updatedAt, &status)
		r.label, r.status = r.ref, "answered"
		if !status.Valid {
			r.status = "in-flight"
		}
		r.version = fmt.Sprintf("%d/%s/%d", r.updatedAt, r.status, r.byteSize)
		return r, err
	}, `SELECT key, CAST(length(request_hash) + length(coalesce(body, '')) AS BIGINT), created_at, status FROM idempotency_keys
		WHERE scope = ? ORDER BY created_at, key LIMIT ?`, userID, limit)
}

func removeIdempotencyKey(ctx context.Context, tx *sql.Tx, userID, ref string) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE scope = ? AND key = ?`, userID, ref)
	return err
}

// listInterrupts lists the user's approvals, pending or decided.
func listInterrupts(ctx context.Context, tx *sql.Tx, userID string, limit int) ([]storedResource, error) {
	return scanResources(ctx, tx, func(rows *sql.Rows) (storedResource, error) {
		var r storedResource
		var decided sql.NullInt64
		err := rows.Scan(&r.ref, &r.byteSize, &r.updatedAt, &decided, &r.status)
		r.label, r.updatedAt = "approval "+r.ref, max(r.updatedAt, decided.Int64)
		r.version = fmt.Sprintf("%d/%s/%d", r.updatedAt, r.status, r.byteSize)
		return r, err
	}, `SELECT id, CAST(length(body) + length(coalesce(reason, '')) AS BIGINT), created_at, decided_at, state FROM interrupts
		WHERE user_id = ? ORDER BY created_at, id LIMIT ?`, userID, limit)
}

func removeInterrupt(ctx context.Context, tx *sql.Tx, userID, ref string) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM interrupts WHERE user_id = ? AND id = ?`, userID, ref)
	return err
}

// listCredentials lists the user's LLM credentials by id, never opening
// their values.
func listCredentials(ctx context.Context, tx *sql.Tx, userID string, limit int) ([]storedResource, error) {
	return scanResources(ctx, tx, func(rows *sql.Rows) (storedResource, error) {
		var r storedResource
		err := rows.Scan(&r.ref, &r.byteSize, &r.updatedAt)
		r.label = r.ref
		r.version = fmt.Sprintf("%d/%d", r.updatedAt, r.byteSize)
		return r, err
	}, `SELECT cred_id, length(value), updated_at FROM llm_credentials WHERE user_id = ? ORDER BY cred_id LIMIT ?`, userID, limit)
}

func removeCredential(ctx context.Context, tx *sql.Tx, userID, ref string) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM llm_credentials WHERE user_id = ? AND cred_id = ?`, userID, ref)
	return err
}
