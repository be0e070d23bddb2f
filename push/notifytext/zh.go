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

		ApprovalBody:      "%s 请你批准：%s",
		ApproveAction:     "批准",
		DenyAction:        "拒绝",
		Approved:          "已批准",
		Declined:          "已拒绝",
		ApprovedElsewhere: "已在另一台设备上批准",
		DeclinedElsewhere: "已在另一台设备上拒绝",
		NoLongerWaiting:   "已不再等待",
		AlreadyAnswered:   "已经答复过了",
	}
}
