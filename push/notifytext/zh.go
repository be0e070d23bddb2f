package notifytext

func init() {
	tables["zh"] = map[Key]string{
		FromContact:      "来自 %s",
		DefaultTitle:     "新消息",
		Receiving:        "正在接收消息…",
		ToolRequestBody:  "%s 需要这台设备继续",
		ReplyInterrupted: "回复中断了",
	}
}
