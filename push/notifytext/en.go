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
	}
}
