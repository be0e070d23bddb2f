package api

import (
	"unicode/utf8"

	"amsg/push/errcode"
)

// decisionRequest is a validated POST /interrupts/{id}/decision body.
type decisionRequest struct {
	Decision string // "approve" or "deny"
	Token    string
	Reason   string // with a denial; "" when absent
	// Endpoint is the deciding device's push endpoint, which the outcome's
	// push leaves out; "" when absent.
	Endpoint string
}

// Bounds of a decision's members.
const (
	maxDecisionToken    = 128
	maxDecisionReason   = 1000 // characters
	maxDecisionEndpoint = 2048
)

// decodeDecision validates a decision body in order: JSON, an object,
// decision, token, reason, endpoint. Unknown members are ignored.
func decodeDecision(body []byte) (decisionRequest, error) {
	var d decisionRequest
	f, err := bodyFields(body)
	if err != nil {
		return d, err
	}
	err = check(
		func() *Error {
			s, ok := f.str("decision")
			if !ok || (s != "approve" && s != "deny") {
				return invalidFields(errcode.DecisionInvalid, "decision")
			}
			d.Decision = s
			return nil
		},
		func() *Error {
			s, ok := f.str("token")
			switch {
			case !f.has("token"):
				return missingFields(errcode.DecisionTokenRequired, "token")
			case !ok || s == "" || len(s) > maxDecisionToken:
				return invalidFields(errcode.DecisionTokenBlank, "token")
			}
			d.Token = s
			return nil
		},
		func() *Error {
			if !f.given("reason") {
				return nil
			}
			s, ok := f.str("reason")
			if !ok || utf8.RuneCountInString(s) > maxDecisionReason {
				return invalidFields(errcode.DecisionReasonInvalid, "reason")
			}
			if d.Decision == "deny" {
				d.Reason = s
			}
			return nil
		},
		func() *Error {
			if !f.given("endpoint") {
				return nil
			}
			s, ok := f.str("endpoint")
			if !ok || len(s) > maxDecisionEndpoint {
				return invalidFields(errcode.DecisionEndpointNotString, "endpoint")
			}
			d.Endpoint = s
			return nil
		},
	)
	return d, err
}
