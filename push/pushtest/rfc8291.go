package pushtest

// RFC8291Example is the example of RFC 8291 §5 and Appendix A in base64url:
// the message, both sides' keys, the salt and the encrypted body, so a
// sender's test can encrypt with the same salt and ephemeral key and
// compare bodies byte for byte.
var RFC8291Example = struct {
	Plaintext  string
	RecordSize int
	Body       string // one record of rs 4096, no padding
	UAPrivate  string // the user agent's key pair and auth secret
	UAPublic   string
	Auth       string
	ASPrivate  string // the application server's ephemeral key pair
	ASPublic   string
	Salt       string
}{
	Plaintext:  "When I grow up, I want to be a watermelon",
	RecordSize: 4096,
	Body: "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6Tl" +
		"zAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN",
	UAPrivate: "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94",
	UAPublic:  "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4",
	Auth:      "BTBZMqHH6r4Tts7J_aSIgg",
	ASPrivate: "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw",
	ASPublic:  "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8",
	Salt:      "DGv6ra1nlYgDCS1FRnbzlw",
}
