package notifytext

func init() {
	tables["zh"] = map[Key]string{
		FromContact:      "来自 %s",
		DefaultTitle:     "新通知",
		DefaultBody:      "新消息",
		Receiving:        "正在接收消息…",
		ToolRequestBody:  "%s 需要这台设备继续",
		Thinking:         "%s 正在思考…",
		Companion:        "你的伙伴",
		ReplyInterrupted: "回复中断了",
	}
}
