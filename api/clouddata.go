package api

import (
	"errors"
	"math"
	"net/http"
	"net/url"
	"slices"

	"amsg/push"
	"amsg/push/errcode"
	"amsg/store"

	"github.com/go-chi/chi/v5"
)

// cloudDataFeature is the user's own view of what amsg holds for it and
// how to delete it (upstream's cloud-data management): an inventory of its
// resources, cleanup plans and the operations that carry them out, and
// the owners it retired. Every answer is encrypted with the user key; the
// inventory shows sizes and labels, never values, keys or endpoints. The
// store does the work (store/clouddata*.go); this file checks the input
// and words the answers.
func (s *Server) cloudDataFeature() feature {
	return feature{
		capabilities: []string{"cloud-data-management"},
		routes: []route{
			{http.MethodGet, "cloud-data/summary", authClient, s.handleCloudSummary},
			{http.MethodGet, "cloud-data/resources", authClient, s.handleCloudResources},
			{http.MethodPost, "cloud-data/cleanup-plans", authClient, s.handleCleanupPlan},
			{http.MethodPost, "cloud-data/cleanup-operations", authClient, s.handleStartCleanup},
			{http.MethodGet, "cloud-data/cleanup-operations", authClient, s.handleCleanupOperations},
			{http.MethodGet, "cloud-data/cleanup-operations/{id}", authClient, s.handleCleanupOperation},
			{http.MethodGet, "cloud-data/owners", authClient, s.handleCloudOwners},
			{http.MethodGet, "cloud-data/owner", authClient, s.handleCloudOwner},
			{http.MethodPost, "cloud-data/owner", authClient, s.handleRestoreCloudOwner},
		},
	}
}

// Errors of the cloud-data routes, upstream's codes and texts.
var (
	errInvalidCloudFilter       = fail(errcode.InvalidCloudFilter)
	errInvalidCloudLimit        = fail(errcode.InvalidCloudLimit)
	errInvalidCloudCursor       = fail(errcode.InvalidCloudCursor)
	errCloudCursorExpired       = fail(errcode.CloudCursorExpired)
	errCloudRecordNotFound      = fail(errcode.CloudRecordNotFound)
	errInvalidCleanupMode       = fail(errcode.InvalidCleanupMode)
	errInvalidCloudOwner        = fail(errcode.InvalidCloudOwner)
	errRetireNeedsOwner         = fail(errcode.RetireNeedsOwner)
	errCleanupNoResources       = fail(errcode.CleanupNoResources)
	errCleanupBadTypes          = fail(errcode.CleanupBadTypes)
	errCleanupNoScope           = fail(errcode.CleanupNoScope)
	errRetireNarrowed           = fail(errcode.RetireNarrowed)
	errCleanupTooMany           = fail(errcode.CleanupTooMany.With(store.MaxCleanupResourceIDs))
	errCloudInventoryIncomplete = fail(errcode.CloudInventoryIncomplete)
	errCloudResourceNotFound    = fail(errcode.CloudResourceNotFound)
	errInvalidCleanupOperation  = fail(errcode.InvalidCleanupOperation)
	errIdempotencyConflict      = fail(errcode.IdempotencyConflict)
	errCloudPlanExpired         = fail(errcode.CloudPlanExpired)
	errCloudPlanChanged         = fail(errcode.CloudPlanChanged)
	errRetirementNotConfirmed   = fail(errcode.RetirementNotConfirmed)
	errInvalidOwnerAction       = fail(errcode.InvalidOwnerAction)
	errCleanupInProgress        = fail(errcode.CleanupInProgress)
)

// Bounds of the inventory's pages, upstream's.
const (
	defaultCloudPage = 50
	maxCloudPage     = 200
)

// cloudErrors maps the store's cleanup errors to the API's.
var cloudErrors = []struct {
	err  error
	resp *Error
}{
	{store.ErrCloudCursorInvalid, errInvalidCloudCursor},
	{store.ErrCloudCursorExpired, errCloudCursorExpired},
	{store.ErrCloudRecordNotFound, errCloudRecordNotFound},
	{store.ErrCloudInventoryIncomplete, errCloudInventoryIncomplete},
	{store.ErrCloudResourceNotFound, errCloudResourceNotFound},
	{store.ErrCloudPlanExpired, errCloudPlanExpired},
	{store.ErrCloudPlanChanged, errCloudPlanChanged},
	{store.ErrIdempotencyConflict, errIdempotencyConflict},
	{store.ErrRetirementNotConfirmed, errRetirementNotConfirmed},
	{store.ErrCleanupInProgress, errCleanupInProgress},
}

func cloudError(err error) error {
	for _, m := range cloudErrors {
		if errors.Is(err, m.err) {
			return m.resp
		}
	}
	return err
}

// cloudFilter reads type, ownerType and ownerId: the owner's two together
// or neither, and a type the inventory has.
func cloudFilter(q url.Values) (store.ResourceFilter, error) {
	f := store.ResourceFilter{Type: q.Get("type"), OwnerType: q.Get("ownerType"), OwnerID: q.Get("ownerId")}
	if (f.OwnerType == "") != (f.OwnerID == "") || f.Type != "" && !slices.Contains(store.ResourceTypes(), f.Type) {
		return store.ResourceFilter{}, errInvalidCloudFilter
	}
	return f, nil
}

// cloudLimit reads limit as upstream does, Number(limit || 50): an integer
// in 1 to maxCloudPage.
func cloudLimit(raw string) (int, error) {
	if raw == "" {
		return defaultCloudPage, nil
	}
	n, ok := push.JSNumber(raw)
	if !ok || n != math.Trunc(n) || n < 1 || n > maxCloudPage {
		return 0, errInvalidCloudLimit
	}
	return int(n), nil
}

func (s *Server) handleCloudSummary(w http.ResponseWriter, r *http.Request) error {
	userID, err := requireUserID(r)
	if err != nil {
		return err
	}
	if _, err := cloudFilter(r.URL.Query()); err != nil {
		return err
	}
	inv, err := s.deps.Store.CloudInventory(r.Context(), userID)
	if err != nil {
		return err
	}
	return s.writeEncrypted(w, userID, inv.Summary())
}

func (s *Server) handleCloudResources(w http.ResponseWriter, r *http.Request) error {
	userID, err := requireUserID(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	filter, err := cloudFilter(q)
	if err != nil {
		return err
	}
	limit, err := cloudLimit(q.Get("limit"))
	if err != nil {
		return err
	}
	page, err := s.deps.Store.CloudResourcePage(r.Context(), userID, filter, q.Get("cursor"), limit)
	if err != nil {
		return cloudError(err)
	}
	return s.writeEncrypted(w, userID, page)
}

func (s *Server) handleCleanupPlan(w http.ResponseWriter, r *http.Request) error {
	userID, payload, err := s.decryptRequest(w, r)
	if err != nil {
		return err
	}
	req, err := decodePlanRequest(decodeObject(payload))
	if err != nil {
		return err
	}
	plan, err := s.deps.Store.CreateCleanupPlan(r.Context(), userID, req)
	if err != nil {
		return cloudError(err)
	}
	plan.Impacts = planImpacts(plan.Mode, prefersChinese(r.Header.Get("Accept-Language")))
	return s.writeEncrypted(w, userID, plan)
}

// planImpacts words what a plan will do, upstream's texts in Chinese.
func planImpacts(mode string, chinese bool) []string {
	switch {
	case mode == store.ModeRetireOwner && chinese:
		return []string{"停用此归属，包含执行时新增的全部所属资源。", "已交给外部推送服务的通知无法撤回。"}
	case mode == store.ModeRetireOwner:
		return []string{"Retires this owner and deletes every resource it owns when the cleanup runs, those added after this preview included.",
			"Notifications already handed to a push service cannot be recalled."}
	case chinese:
		return []string{"仅清理预览中的资源；后续正常写入可以重新创建。"}
	}
	return []string{"Only the resources in this preview are deleted; later ordinary writes can create them again."}
}

// decodePlanRequest checks a plan request in upstream's order: the mode,
// the owner, the resource ids, the types, then that the selection is
// neither empty (purge) nor narrowed (retire-owner).
func decodePlanRequest(fields map[string]any) (store.PlanRequest, error) {
	var req store.PlanRequest
	mode, _ := fields["mode"].(string)
	if mode != store.ModePurge && mode != store.ModeRetireOwner {
		return req, errInvalidCleanupMode
	}
	req.Mode = mode
	rawOwner, hasOwner := fields["owner"]
	if hasOwner {
		owner, ok := decodeOwner(rawOwner)
		if !ok {
			return req, errInvalidCloudOwner
		}
		req.Owner = &owner
	}
	if mode == store.ModeRetireOwner && req.Owner == nil {
		return req, errRetireNeedsOwner
	}
	rawIDs, hasIDs := fields["resourceIds"]
	if hasIDs {
		items, ok := rawIDs.([]any)
		if !ok || len(items) == 0 {
			return req, errCleanupNoResources
		}
		if len(items) > store.MaxCleanupResourceIDs {
			return req, errCleanupTooMany.withDetails(map[string]int{"count": len(items), "max": store.MaxCleanupResourceIDs})
		}
		req.ResourceIDs = make([]string, len(items))
		for i, item := range items {
			if req.ResourceIDs[i], ok = item.(string); !ok {
				return req, errCleanupNoResources
			}
		}
	}
	rawTypes, hasTypes := fields["types"]
	if hasTypes {
		items, ok := rawTypes.([]any)
		if !ok || len(items) == 0 {
			return req, errCleanupBadTypes
		}
		req.Types = make([]string, len(items))
		for i, item := range items {
			if req.Types[i], ok = item.(string); !ok || !slices.Contains(store.ResourceTypes(), req.Types[i]) {
				return req, errCleanupBadTypes
			}
		}
	}
	switch {
	case mode == store.ModePurge && req.Owner == nil && len(req.ResourceIDs) == 0:
		return req, errCleanupNoScope
	case mode == store.ModeRetireOwner && (hasIDs || hasTypes):
		return req, errRetireNarrowed
	}
	return req, nil
}

// decodeOwner reads an owner object {type, id, label?} that passes
// store.CheckOwner.
func decodeOwner(v any) (store.Owner, bool) {
	fields, ok := v.(map[string]any)
	if !ok {
		return store.Owner{}, false
	}
	var o store.Owner
	var typeOK, idOK bool
	o.Type, typeOK = fields["type"].(string)
	o.ID, idOK = fields["id"].(string)
	if label, present := fields["label"]; present && label != nil {
		if o.Label, ok = label.(string); !ok {
			return store.Owner{}, false
		}
	}
	return o, typeOK && idOK && store.CheckOwner(o) == nil
}

func (s *Server) handleStartCleanup(w http.ResponseWriter, r *http.Request) error {
	userID, payload, err := s.decryptRequest(w, r)
	if err != nil {
		return err
	}
	fields := decodeObject(payload)
	planID, planOK := fields["planId"].(string)
	key, keyOK := fields["idempotencyKey"].(string)
	if !planOK || !keyOK || push.IsJSBlank(key) || push.JSLength(key) > store.MaxIdempotencyKeyLen {
		return errInvalidCleanupOperation
	}
	op, err := s.deps.Store.StartCleanup(r.Context(), userID, planID, key)
	// Devices may be gone: the courier must read them again.
	s.deps.Courier.Forget(userID)
	if err != nil {
		return cloudError(err)
	}
	return s.writeEncrypted(w, userID, op)
}

func (s *Server) handleCleanupOperations(w http.ResponseWriter, r *http.Request) error {
	userID, err := requireUserID(r)
	if err != nil {
		return err
	}
	ops, unreadable, err := s.deps.Store.CleanupOperations(r.Context(), userID)
	if err != nil {
		return err
	}
	gaps := unreadableGaps("operation", errcode.UnreadableOperations, unreadable)
	return s.writeEncrypted(w, userID, struct {
		Operations []store.CleanupOperation `json:"operations"`
		Complete   bool                     `json:"complete"`
		Gaps       []store.CloudGap         `json:"gaps"`
	}{append([]store.CleanupOperation{}, ops...), len(gaps) == 0, gaps})
}

func (s *Server) handleCleanupOperation(w http.ResponseWriter, r *http.Request) error {
	userID, err := requireUserID(r)
	if err != nil {
		return err
	}
	op, err := s.deps.Store.CleanupOperation(r.Context(), userID, chi.URLParam(r, "id"))
	if err != nil {
		return cloudError(err)
	}
	return s.writeEncrypted(w, userID, op)
}

// unreadableGaps reports the records of a source that do not decrypt, as
// upstream's gap UNREADABLE_OPERATION does.
func unreadableGaps(source string, gap *errcode.Message, unreadable int) []store.CloudGap {
	if unreadable == 0 {
		return []store.CloudGap{}
	}
	return []store.CloudGap{{Source: source, Code: gap.Code(), Message: gap.With(unreadable).English()}}
}

// ownerJSON is an owner's state as upstream answers it.
type ownerJSON struct {
	Owner      store.Owner      `json:"owner"`
	Retired    bool             `json:"retired"`
	Generation int64            `json:"generation"`
	UpdatedAt  *int64           `json:"updatedAt"`
	Complete   bool             `json:"complete"`
	Gaps       []store.CloudGap `json:"gaps"`
}

func ownerStateJSON(state store.OwnerState) ownerJSON {
	o := ownerJSON{Owner: state.Owner, Retired: state.Retired, Generation: state.Generation, Complete: true, Gaps: []store.CloudGap{}}
	if !state.UpdatedAt.IsZero() {
		o.UpdatedAt = nonZero(state.UpdatedAt.UnixMilli())
	}
	return o
}

func (s *Server) handleCloudOwners(w http.ResponseWriter, r *http.Request) error {
	userID, err := requireUserID(r)
	if err != nil {
		return err
	}
	states, unreadable, err := s.deps.Store.CloudOwners(r.Context(), userID)
	if err != nil {
		return err
	}
	owners := make([]ownerJSON, len(states))
	for i, state := range states {
		owners[i] = ownerStateJSON(state)
	}
	gaps := unreadableGaps("owner", errcode.UnreadableOwners, unreadable)
	return s.writeEncrypted(w, userID, struct {
		Owners   []ownerJSON      `json:"owners"`
		Complete bool             `json:"complete"`
		Gaps     []store.CloudGap `json:"gaps"`
	}{owners, len(gaps) == 0, gaps})
}

func (s *Server) handleCloudOwner(w http.ResponseWriter, r *http.Request) error {
	userID, err := requireUserID(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	owner := store.Owner{Type: q.Get("ownerType"), ID: q.Get("ownerId")}
	if store.CheckOwner(owner) != nil {
		return errInvalidCloudOwner
	}
	state, err := s.deps.Store.CloudOwner(r.Context(), userID, owner)
	if err != nil {
		return err
	}
	return s.writeEncrypted(w, userID, ownerStateJSON(state))
}

func (s *Server) handleRestoreCloudOwner(w http.ResponseWriter, r *http.Request) error {
	userID, payload, err := s.decryptRequest(w, r)
	if err != nil {
		return err
	}
	fields := decodeObject(payload)
	owner, ok := decodeOwner(fields["owner"])
	if !ok {
		return errInvalidCloudOwner
	}
	if fields["action"] != "restore" {
		return errInvalidOwnerAction
	}
	state, err := s.deps.Store.RestoreCloudOwner(r.Context(), userID, owner)
	if err != nil {
		return cloudError(err)
	}
	return s.writeEncrypted(w, userID, ownerStateJSON(state))
}
