package notifytext

func init() {
	tables[English] = map[Key]string{
		FromContact:      "From %s",
		DefaultTitle:     "New notification",
		DefaultBody:      "New message",
		Receiving:        "Receiving a message…",
		ToolRequestBody:  "%s needs this device to continue",
		Thinking:         "%s is thinking…",
		Companion:        "Your companion",
		ReplyInterrupted: "The reply was interrupted",

		ApprovalBody:      "%s asks for your approval: %s",
		ApproveAction:     "Approve",
		DenyAction:        "Deny",
		Approved:          "Approved",
		Declined:          "Declined",
		ApprovedElsewhere: "Approved on another device",
		DeclinedElsewhere: "Declined on another device",
		NoLongerWaiting:   "No longer waiting",
		AlreadyAnswered:   "Already answered",
	}
}
