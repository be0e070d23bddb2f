package notifytext

func init() {
	tables[English] = map[Key]string{
		FromContact:      "From %s",
		DefaultTitle:     "New message",
		Receiving:        "Receiving a message…",
		ToolRequestBody:  "%s needs this device to continue",
		ReplyInterrupted: "The reply was interrupted",
	}
}
