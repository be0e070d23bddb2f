package api

import (
	"encoding/json"
	"strings"

	"amsg/push"
	"amsg/push/errcode"
	"amsg/store"
)

var errInvalidLanguage = fail(errcode.InvalidLanguage)

// deviceLanguage is the language a PUT /push-subscription reports for its
// device: the body's language member (raw JSON, nil when absent), else the
// first tag of the request's Accept-Language, else "". The member must be a
// well-formed tag (errInvalidLanguage); a header that is not one is ignored,
// as browsers and proxies write what they like there.
func deviceLanguage(member json.RawMessage, acceptLanguage string) (string, error) {
	if k := push.JSONKind(member); k != 0 && k != 'n' {
		tag, ok := push.JSONString(member)
		if !ok || !isLanguageTag(tag) {
			return "", errInvalidLanguage
		}
		return tag, nil
	}
	first, _, _ := strings.Cut(acceptLanguage, ",")
	tag, _, _ := strings.Cut(first, ";")
	if tag = strings.TrimSpace(tag); isLanguageTag(tag) {
		return tag, nil
	}
	return "", nil
}

// isLanguageTag reports whether tag has the shape of a BCP 47 tag (RFC 5646
// §2.1): a primary subtag of 2 to 8 letters, then subtags of 1 to 8 letters
// or digits, joined by "-", at most store.MaxLanguageBytes in all. "_"
// (zh_CN, as some systems write it) is accepted as "-".
func isLanguageTag(tag string) bool {
	if tag == "" || len(tag) > store.MaxLanguageBytes {
		return false
	}
	for i, sub := range strings.Split(strings.ReplaceAll(tag, "_", "-"), "-") {
		if len(sub) == 0 || len(sub) > 8 || (i == 0 && len(sub) < 2) {
			return false
		}
		for _, c := range sub {
			letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
			if !letter && (i == 0 || c < '0' || c > '9') {
				return false
			}
		}
	}
	return true
}
