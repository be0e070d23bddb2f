package api

import "unicode/utf8"

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
				return invalidFields(`decision 必须是 "approve" 或 "deny"`, "decision")
			}
			d.Decision = s
			return nil
		},
		func() *Error {
			s, ok := f.str("token")
			switch {
			case !f.has("token"):
				return missingFields("token 必填", "token")
			case !ok || s == "" || len(s) > maxDecisionToken:
				return invalidFields("token 必须是非空字符串", "token")
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
				return invalidFields("reason 必须是不超过 1000 字的字符串", "reason")
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
				return invalidFields("endpoint 必须是字符串", "endpoint")
			}
			d.Endpoint = s
			return nil
		},
	)
	return d, err
}
