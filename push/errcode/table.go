package errcode

import "net/http"

// The table. Each code is defined once (define: its status, English and
// the standard's Chinese); its more specific messages follow it (also). A
// message without English of its own ("") is said in English by its code's
// General English with the fields the error names; texts with verbs are
// filled by With. Add a new code in a new section at the end, headed with
// its topic and issue.
var (
	// Routing and the process.
	NotFound         = define("NOT_FOUND", http.StatusNotFound, "Unknown route", "Unknown route")
	MethodNotAllowed = define("METHOD_NOT_ALLOWED", http.StatusMethodNotAllowed, "Only POST is supported", "Only POST is supported")
	Internal         = define("INTERNAL_ERROR", http.StatusInternalServerError, "Internal server error", "服务器内部错误")
	InitFailed       = define("INIT_FAILED", http.StatusInternalServerError, "The database schema check failed", "数据库结构检查失败")

	// Authorization.
	InvalidClientToken = define("INVALID_CLIENT_TOKEN", http.StatusUnauthorized, "Missing or invalid shared secret", "共享密钥无效或缺失")
	ClientTokenMissing = InvalidClientToken.also("Missing X-Client-Token", "缺少 X-Client-Token")
	ClientTokenWrong   = InvalidClientToken.also("Invalid X-Client-Token", "X-Client-Token 无效")
	Unauthorized       = define("UNAUTHORIZED", http.StatusUnauthorized, "Missing or invalid Bearer token", "token 已过期或无效")
	BearerMissing      = Unauthorized.also("Missing Authorization: Bearer <token>", "缺少 Authorization: Bearer <token>")
	BearerEmpty        = Unauthorized.also("Empty Bearer token", "空 Bearer token")
	TokenMalformed     = Unauthorized.also("Malformed token", "token 格式无效")
	SignatureMalformed = Unauthorized.also("Malformed token signature", "token 签名格式无效")
	SignatureInvalid   = Unauthorized.also("Invalid token signature", "token 签名无效")
	TokenUnreadable    = Unauthorized.also("Unreadable token payload", "token payload 解析失败")
	InvalidAdminToken  = define("INVALID_ADMIN_TOKEN", http.StatusUnauthorized, "Missing or invalid operator token", "管理令牌无效或缺失")
	RateLimited        = define("RATE_LIMITED", http.StatusTooManyRequests, "Too many requests; retry later", "请求过于频繁，请稍后再试")
	QuotaExceeded      = define("QUOTA_EXCEEDED", http.StatusForbidden, "Quota exceeded", "已超出配额")
	QuotaOf            = QuotaExceeded.also("", "超出配额 %s（上限 %d）")
	RequestTimeout     = define("REQUEST_TIMEOUT", http.StatusRequestTimeout, "The request body did not arrive in time", "请求体未在限定时间内送达")
	UnsupportedMedia   = define("UNSUPPORTED_MEDIA_TYPE", http.StatusUnsupportedMediaType, "Content-Type must be application/json", "Content-Type 必须是 application/json")

	// The user id and the encrypted request envelope.
	UserIDRequired        = define("USER_ID_REQUIRED", http.StatusBadRequest, "Missing user id (X-User-Id)", "缺少用户标识符")
	InvalidUserIDFormat   = define("INVALID_USER_ID_FORMAT", http.StatusBadRequest, "Invalid user id: it must be a UUID v4", "用户标识符格式无效，必须是 UUID v4")
	EncryptionRequired    = define("ENCRYPTION_REQUIRED", http.StatusBadRequest, "The request body must be encrypted", "请求体必须加密")
	UnsupportedEncryption = define("UNSUPPORTED_ENCRYPTION_VERSION", http.StatusBadRequest, "Unsupported encryption version", "加密版本不支持")
	InvalidEnvelope       = define("INVALID_ENCRYPTED_PAYLOAD", http.StatusBadRequest, "Malformed encrypted payload", "加密数据格式错误")
	DecryptionFailed      = define("DECRYPTION_FAILED", http.StatusBadRequest, "The request body could not be decrypted", "请求体解密失败")

	// Request bodies.
	InvalidPayloadFormat    = define("INVALID_PAYLOAD_FORMAT", http.StatusBadRequest, "Invalid request payload", "请求体格式错误")
	PlaintextNotJSON        = InvalidPayloadFormat.also("The decrypted data is not valid JSON", "解密后的数据不是合法 JSON")
	PlaintextNotObject      = InvalidPayloadFormat.also("The decrypted data must be a JSON object", "解密后的数据必须是 JSON 对象")
	BodyNotJSON             = InvalidPayloadFormat.also("The request body is not valid JSON", "请求体不是合法 JSON")
	BodyUnreadable          = InvalidPayloadFormat.also("The request body could not be read", "无法读取请求体")
	PayloadNotObject        = InvalidPayloadFormat.also("The payload must be a JSON object", "payload 必须是 JSON 对象")
	ToolResultsMismatch     = InvalidPayloadFormat.also("The tool results do not match the tool calls the session waits for", "工具结果与会话等待的工具调用不符")
	SessionIDRequired       = InvalidPayloadFormat.also("sessionId is required and must be a non-empty string", "sessionId 必填且为非空字符串")
	ContactNameRequired     = InvalidPayloadFormat.also("contactName is required", "contactName 必填")
	CompletePromptBlank     = InvalidPayloadFormat.also("completePrompt must be a non-empty string", "completePrompt 必须是非空字符串")
	TemperatureNotFinite    = InvalidPayloadFormat.also("temperature must be a finite number", "temperature 必须是有限数字")
	SubscriptionShape       = InvalidPayloadFormat.also("pushSubscription must be a valid Web Push subscription", "pushSubscription 必须是合法 Web Push 订阅对象")
	MessageSubtypeNotString = InvalidPayloadFormat.also("messageSubtype must be a string", "messageSubtype 必须是字符串")
	ToolsNotArray           = InvalidPayloadFormat.also("tools must be an array", "tools 必须是数组")
	MessagesRequired        = InvalidPayloadFormat.also("`messages` is required on /continue", "`messages` is required on /continue")
	PromptOrMessages        = InvalidPayloadFormat.also("exactly one of `completePrompt` or `messages` must be provided", "exactly one of `completePrompt` or `messages` must be provided")
	PromptAndMessages       = InvalidPayloadFormat.also("", "exactly one of `completePrompt` or `messages` must be provided（两者不能同时出现）")
	// MessagesShape carries a Messages* text below in Chinese
	// (llm.MessagesError.Chinese) with the code's General English.
	MessagesShape       = InvalidPayloadFormat.also("", "%s")
	FieldRequired       = InvalidPayloadFormat.also("", "%s 必填")
	FieldNotPositiveInt = InvalidPayloadFormat.also("", "%s 必须是正整数")
	FieldBlank          = InvalidPayloadFormat.also("", "%s 必须是非空字符串")
	IterationOutOfRange = InvalidPayloadFormat.also("", "iteration 必须是 0..%d 范围内的整数")
	SplitFieldRemoved   = InvalidPayloadFormat.also(
		"%s is removed in 0.8.0; caller is responsible for splitting (return decision.pushPayloads with the exact pushes you want sent)",
		"%s is removed in 0.8.0; caller is responsible for splitting (return decision.pushPayloads with the exact pushes you want sent)")
	InstantFirstSendTime     = InvalidPayloadFormat.also("", "amsg-instant 不接受 firstSendTime；该字段属于 amsg-server 的定时消息")
	InstantRecurrenceType    = InvalidPayloadFormat.also("", `amsg-instant 不支持 recurrenceType（必须省略或为 "none"）`)
	InstantMessageType       = InvalidPayloadFormat.also("", `amsg-instant 仅支持 messageType: "instant"（或省略）`)
	CompletePromptOnHookPath = define("COMPLETE_PROMPT_NOT_SUPPORTED_ON_HOOK_PATH", http.StatusBadRequest,
		"completePrompt is not accepted on /continue; pass a `messages` array directly", "completePrompt is not accepted on /continue; pass a `messages` array directly")
	PayloadTooLarge = define("PAYLOAD_TOO_LARGE", http.StatusRequestEntityTooLarge, "The payload is too large", "请求体过大")
	BodyTooLarge    = PayloadTooLarge.also("", "请求体超过 %d 字节上限")
	InvalidAPIURL   = define("INVALID_API_URL", http.StatusBadRequest, "apiUrl is not an allowed LLM endpoint", "apiUrl 不是允许的 LLM 地址")

	// Tasks.
	InvalidParameters   = define("INVALID_PARAMETERS", http.StatusBadRequest, "Missing or invalid parameters", "缺少必需参数或参数格式错误")
	DeviceSeenBody      = InvalidParameters.also(`The body must be {"endpoint": the push endpoint URL}`, `请求体必须是 {"endpoint": 推送端点 URL}`)
	ImmediateNotBoolean = InvalidParameters.also("immediate must be a boolean", "immediate 必须是布尔值")
	ImmediateOnInstant  = InvalidParameters.also("messageType 'instant' is delivered at once and cannot carry immediate", "messageType 'instant' 本就立即投递，不能再带 immediate")
	SupersedesNotUUID   = InvalidParameters.also("supersedesUuid must be a valid UUID", "supersedesUuid 必须是合法 UUID")
	SupersedesItself    = InvalidParameters.also("supersedesUuid must differ from the task's uuid", "supersedesUuid 不能与本条任务的 uuid 相同")
	InvalidTzID         = InvalidParameters.also("tzId must be an IANA time zone id (such as Asia/Tokyo)", "tzId 必须是可用的 IANA 时区 id（如 Asia/Tokyo）")
	CronRequired        = InvalidParameters.also(`recurrenceType "cron" needs cronExpr (a five-field cron expression such as "0 9 * * 1-5")`, `recurrenceType "cron" 需要 cronExpr（五段 cron 表达式，如 "0 9 * * 1-5"）`)
	CronInvalid         = InvalidParameters.also(`cronExpr must be a five-field cron expression such as "0 9 * * 1-5"`, `cronExpr 必须是五段 cron 表达式，如 "0 9 * * 1-5"`)
	CronNotCron         = InvalidParameters.also(`cronExpr is only for recurrenceType "cron"`, `cronExpr 只用于 recurrenceType "cron"`)
	InstantRecurrence   = InvalidParameters.also(`recurrenceType must be "none" for an instant task`, "instant 类型的 recurrenceType 必须为 none")
	InstantNoContent    = InvalidParameters.also("An instant task needs userMessage or a complete AI configuration", "instant 类型必须提供 userMessage 或完整的 AI 配置")
	ExtraBodyNotObject  = InvalidParameters.also("llmExtraBody must be a plain object", "llmExtraBody 必须是普通对象")
	// MetadataNotObject is said Under INVALID_PAYLOAD_FORMAT on /instant
	// and /continue.
	MetadataNotObject = InvalidParameters.also("metadata must be a plain object", "metadata 必须是普通对象")
	InvalidLimit      = InvalidParameters.also("limit must be a positive integer", "limit 参数无效，必须为正整数")
	InvalidOffset     = InvalidParameters.also("offset must be a non-negative integer", "offset 参数无效，必须为非负整数")
	// SplitPatternInvalid carries a SplitPattern* text below
	// (llm.ValidateSplitPattern's error) with the code's General English.
	SplitPatternInvalid = InvalidParameters.also("", "%s")
	InvalidTimestamp    = define("INVALID_TIMESTAMP", http.StatusBadRequest, "Invalid time", "时间格式无效")
	TimeNotInFuture     = InvalidTimestamp.also("The time must be in the future", "时间必须在未来")
	InvalidMessageType  = define("INVALID_MESSAGE_TYPE", http.StatusBadRequest, "Invalid message type", "消息类型无效")
	InvalidUpdateData   = define("INVALID_UPDATE_DATA", http.StatusBadRequest, "Invalid update data", "更新数据格式错误")
	// The update's own checks; the schedule's shared ones are said Under
	// INVALID_UPDATE_DATA.
	UpdateContactNameBlank  = InvalidUpdateData.also("", "contactName 必须是非空字符串")
	UpdateTzIDInvalid       = InvalidUpdateData.also("", "tzId 必须是可用的 IANA 时区 id（如 Asia/Tokyo），或 null 表示按 UTC 推进")
	UpdatePromptAndMessages = InvalidUpdateData.also("", "completePrompt 与 messages 不能同时更新（二选一）")
	TaskIDRequired          = define("TASK_ID_REQUIRED", http.StatusBadRequest, "Missing task id", "缺少任务ID")
	TaskNotFound            = define("TASK_NOT_FOUND", http.StatusNotFound, "The task does not exist or was deleted", "指定的任务不存在或已被删除")
	TaskUUIDConflict        = define("TASK_UUID_CONFLICT", http.StatusConflict, "A task with this UUID already exists; submit again with a new uuid", "任务 UUID 已存在，请使用新的 uuid 重新提交")
	TaskAlreadyCompleted    = define("TASK_ALREADY_COMPLETED", http.StatusConflict, "The task has completed or failed and cannot be updated", "任务已完成或已失败，无法更新")
	TaskEnded               = TaskAlreadyCompleted.also("The task has completed or failed", "任务已完成或已失败")
	MessageSendFailed       = define("MESSAGE_SEND_FAILED", http.StatusInternalServerError, "The message could not be sent", "消息发送失败")

	// Push subscriptions and delivery.
	InvalidSubscription = define("INVALID_PUSH_SUBSCRIPTION", http.StatusBadRequest, "Invalid push subscription", "推送订阅格式无效")
	// SubscriptionRefused takes the refusal's text, then its reason.
	SubscriptionRefused      = InvalidSubscription.also("Invalid push subscription: %[2]s", "推送订阅无效：%[1]s")
	InvalidUpdatedAt         = define("INVALID_UPDATED_AT", http.StatusBadRequest, "updatedAt must be a positive integer (milliseconds)", "updatedAt 必须是正整数（毫秒时间戳）")
	SubscriptionMissing      = define("PUSH_SUBSCRIPTION_MISSING", http.StatusConflict, "This user has no registered push subscription (PUT /push-subscription)", "该用户还没有登记推送订阅（PUT /push-subscription）")
	SubscriptionLookupFailed = define("PUSH_SUBSCRIPTION_LOOKUP_FAILED", http.StatusServiceUnavailable, "The push subscription could not be read; retry later", "推送订阅读取失败，请稍后重试")
	DeviceNotFound           = define("PUSH_SUBSCRIPTION_NOT_FOUND", http.StatusNotFound, "This device has no registered push subscription (PUT /push-subscription)", "该设备未登记推送订阅（PUT /push-subscription）")
	SubscriptionNotAccepted  = define("PUSH_SUBSCRIPTION_NOT_ACCEPTED", http.StatusBadRequest, "pushSubscription is no longer updated with a task; use PUT /push-subscription to replace the user's subscription", "pushSubscription 不再随任务更新，改用 PUT /push-subscription 覆盖用户级订阅")
	PushSendFailed           = define("PUSH_SEND_FAILED", http.StatusBadGateway, "Web Push delivery failed", "Web Push 推送失败")
	LLMCallFailed            = define("LLM_CALL_FAILED", http.StatusBadGateway, "The LLM call failed", "LLM 调用失败")
	MalformedToolCalls       = LLMCallFailed.also("AI API error: malformed tool_calls: %s", "AI API 错误：tool_calls 格式不对：%s")
	LoopExceeded             = define("LOOP_EXCEEDED", http.StatusBadGateway, "The agent loop reached its iteration limit", "代理循环已达到最大轮数")
	LoopExceededAfter        = LoopExceeded.also("Agentic loop exceeded %d iterations", "代理循环超过了 %d 轮")
	BudgetExhausted          = define("BUDGET_EXHAUSTED", http.StatusBadGateway, "The session's token budget is exhausted", "会话的 token 预算已用完")
	BudgetExhaustedAfter     = BudgetExhausted.also("Session token budget of %d tokens exhausted (%d used)", "会话的 token 预算 %d 已用完（已用 %d）")

	// Sessions.
	SessionNotFound    = define("SESSION_NOT_FOUND", http.StatusNotFound, "The session does not exist or has expired", "会话不存在或已过期")
	ConcurrentContinue = define("CONCURRENT_CONTINUE", http.StatusConflict, "This round was handled by another /continue, or the session is not waiting for tool results", "这一轮已由另一个 /continue 处理，或会话没有在等待工具结果")

	// Client state and the outbox.
	InvalidStateEntries    = define("INVALID_STATE_ENTRIES", http.StatusBadRequest, "entries must be a non-empty array", "entries 必须是非空数组")
	TooManyStateEntries    = define("TOO_MANY_STATE_ENTRIES", http.StatusBadRequest, "Too many entries in one request", "单次条目过多")
	StateEntriesOver       = TooManyStateEntries.also("", "单次最多 %d 条")
	NamespaceRequired      = define("NAMESPACE_REQUIRED", http.StatusBadRequest, "The namespace query parameter is required", "必须提供 namespace 查询参数")
	StateNamespaceReserved = define("INVALID_STATE_NAMESPACE", http.StatusBadRequest, `namespace must not contain control characters (\u0000-\u001f are reserved)`, `namespace 不能包含控制字符（\u0000-\u001f 为库内部保留）`)
	InvalidOutboxCursor    = define("INVALID_OUTBOX_CURSOR", http.StatusBadRequest, "since must be a non-negative integer (the cursor of the previous page)", "since 必须是非负整数（上一页响应里的 cursor）")
	InvalidOutboxLimit     = define("INVALID_OUTBOX_LIMIT", http.StatusBadRequest, "limit is out of range", "limit 超出范围")
	OutboxLimitRange       = InvalidOutboxLimit.also("", "limit 必须是 1-%d 的整数")
	InvalidOutboxAck       = define("INVALID_OUTBOX_ACK", http.StatusBadRequest, "messageIds must be a non-empty array", "messageIds 必须是非空数组")
	OutboxAckIDBlank       = InvalidOutboxAck.also("Every item of messageIds must be a non-empty string", "messageIds 的每一项必须是非空字符串")
	TooManyOutboxAckIDs    = define("TOO_MANY_OUTBOX_ACK_IDS", http.StatusBadRequest, "Too many messageIds in one request", "单次 ack 条目过多")
	OutboxAckIDsOver       = TooManyOutboxAckIDs.also("", "单次最多 ack %d 条")

	// The operator API.
	UserNotFound      = define("USER_NOT_FOUND", http.StatusNotFound, "No such user", "用户不存在")
	BroadcastNotFound = define("BROADCAST_NOT_FOUND", http.StatusNotFound, "No such broadcast", "广播不存在")

	// Control of what fires (issue 18).
	TaskInFlight = define("TASK_IN_FLIGHT", http.StatusConflict, "The task is being delivered; change its time once this occurrence is done", "任务正在投递中，暂时不能修改发送时间，请稍后重试")

	// Quiet hours, daily limits, priorities and idempotency keys (issue 18).
	UnknownPreference     = define("UNKNOWN_PREFERENCE", http.StatusBadRequest, "Unknown preference (only timeZone, quietHours and dailyLimit)", "未知的偏好设置字段（只接受 timeZone、quietHours、dailyLimit）")
	InvalidTimeZone       = define("INVALID_TIME_ZONE", http.StatusBadRequest, "timeZone must be an IANA time zone id (such as Asia/Tokyo), or null", "timeZone 必须是可用的 IANA 时区 id（如 Asia/Tokyo），或 null")
	InvalidQuietHours     = define("INVALID_QUIET_HOURS", http.StatusBadRequest, `quietHours must be {"start":"HH:MM","end":"HH:MM"} (00:00 to 23:59), or null`, `quietHours 必须是 {"start":"HH:MM","end":"HH:MM"}（00:00 至 23:59），或 null`)
	QuietHoursEmpty       = define("QUIET_HOURS_EMPTY", http.StatusBadRequest, "quietHours start and end must differ", "quietHours 的 start 与 end 不能相同")
	InvalidDailyLimit     = define("INVALID_DAILY_LIMIT", http.StatusBadRequest, "dailyLimit must be an integer from 0 to %d, or null", "dailyLimit 必须是 0 到 %d 的整数，或 null")
	InvalidPriority       = define("INVALID_PRIORITY", http.StatusBadRequest, `priority must be "normal" or "critical"`, `priority 必须是 "normal" 或 "critical"`)
	InvalidIdempotencyKey = define("INVALID_IDEMPOTENCY_KEY", http.StatusBadRequest, "Idempotency-Key must be 1 to 255 printable ASCII characters", "Idempotency-Key 必须是 1 到 255 个可打印 ASCII 字符")
	IdempotencyKeyTooLong = define("IDEMPOTENCY_KEY_TOO_LONG", http.StatusBadRequest, "Idempotency-Key must not be longer than 255 characters", "Idempotency-Key 不能超过 255 个字符")
	IdempotencyKeyReused  = define("IDEMPOTENCY_KEY_REUSED", http.StatusUnprocessableEntity, "This Idempotency-Key was used for another request", "该 Idempotency-Key 已用于另一个请求")
	IdempotencyKeyInUse   = define("IDEMPOTENCY_KEY_IN_USE", http.StatusConflict, "A request with this Idempotency-Key is still being processed; retry later", "使用该 Idempotency-Key 的请求仍在处理中，请稍后重试")

	// Approvals (issue 21).
	InvalidApprovalTools      = define("INVALID_APPROVAL_TOOLS", http.StatusBadRequest, "approvalTools must name functions declared in tools, and the request must carry X-User-Id", "approvalTools 必须列出 tools 中声明的函数名，且请求须带 X-User-Id")
	InvalidApprovalTimeout    = define("INVALID_APPROVAL_TIMEOUT", http.StatusBadRequest, "approvalTimeoutSeconds is out of range", "approvalTimeoutSeconds 超出允许范围")
	InterruptNotFound         = define("INTERRUPT_NOT_FOUND", http.StatusNotFound, "No such approval, or it was pruned", "审批不存在或已被清理")
	InterruptTokenInvalid     = define("INTERRUPT_TOKEN_INVALID", http.StatusForbidden, "The decision token is invalid or belongs to another approval", "决定令牌无效，或不属于这个审批")
	InterruptAlreadyDecided   = define("INTERRUPT_ALREADY_DECIDED", http.StatusConflict, "This approval has already been decided", "这个审批已经有了决定")
	InterruptExpired          = define("INTERRUPT_EXPIRED", http.StatusGone, "This approval has expired", "这个审批已过期")
	InvalidInterruptStatus    = define("INVALID_INTERRUPT_STATUS", http.StatusBadRequest, `status supports only "pending"`, `status 只支持 "pending"`)
	DecisionInvalid           = InvalidPayloadFormat.also(`decision must be "approve" or "deny"`, `decision 必须是 "approve" 或 "deny"`)
	DecisionTokenRequired     = InvalidPayloadFormat.also("token is required", "token 必填")
	DecisionTokenBlank        = InvalidPayloadFormat.also("token must be a non-empty string", "token 必须是非空字符串")
	DecisionReasonInvalid     = InvalidPayloadFormat.also("reason must be a string of at most 1000 characters", "reason 必须是不超过 1000 字的字符串")
	DecisionEndpointNotString = InvalidPayloadFormat.also("endpoint must be a string", "endpoint 必须是字符串")

	// Hostile callers, round two (issue 22).
	EndpointTaken   = define("PUSH_SUBSCRIPTION_CONFLICT", http.StatusConflict, "This push endpoint is registered by another user with other keys", "该推送端点已由另一用户以不同密钥登记")
	InvalidDeviceID = InvalidParameters.also("deviceId must be a positive integer", "deviceId 必须是正整数")

	// Upstream's newest line: client state, outbox, credentials, gzip (issue 20).
	StateNamespaceLength       = StateNamespaceReserved.also("namespace must be a string of 1-%d characters", "namespace 必须是 1-%d 字符的字符串")
	InvalidNamespaceLimit      = define("INVALID_NAMESPACE_LIMIT", http.StatusBadRequest, "limit must be an integer from 1 to %d", "limit 必须是 1-%d 的整数")
	OutboxDeleteTarget         = InvalidParameters.also("Give either {all: true} or a non-empty messageIds array", "要么 { all: true }，要么 messageIds 非空数组")
	OutboxDeleteBoth           = InvalidParameters.also("all and messageIds cannot be given together", "all 与 messageIds 不能同时出现")
	OutboxDeleteOver           = InvalidParameters.also("", "messageIds 一次最多 %d 条")
	OutboxDeleteIDBlank        = InvalidParameters.also("", "messageIds[%d] 必须是非空字符串")
	UnsupportedContentEncoding = define("UNSUPPORTED_CONTENT_ENCODING", http.StatusUnsupportedMediaType, "Unsupported Content-Encoding (only gzip is accepted)", "不支持的 Content-Encoding（只支持 gzip）")
	InvalidContentEncoding     = define("INVALID_CONTENT_ENCODING", http.StatusBadRequest, "The request body is not valid gzip data", "请求体不是有效的 gzip 数据")
	TaskPayloadTooLarge        = define("TASK_PAYLOAD_TOO_LARGE", http.StatusBadRequest, "The task is larger than the limit (details: bytes, maxBytes)", "任务内容超过字节上限")
	TaskPayloadOver            = TaskPayloadTooLarge.also("", "任务内容 %d 字节，超过 %d 字节上限")
	CredentialsNotArray        = InvalidParameters.also("credentials must be a non-empty array", "credentials 必须是非空数组")
	CredentialsBatchOver       = InvalidParameters.also("", "credentials 一批最多 %d 条")
	CredIDInvalid              = InvalidParameters.also("", "%s 必须是 1–%d 字符、不含控制字符的字符串")
	CredentialValueInvalid     = InvalidParameters.also("", "credentials[%d].%s")
	// The problems of a credential's value, said inside CredentialValueInvalid.
	CredValueNotObject  = InvalidParameters.also("", "value 必须是 { apiUrl, apiKey, primaryModel } 对象")
	CredValueFieldBlank = InvalidParameters.also("", "value.%s 必须是非空字符串")
	CredValueFieldLong  = InvalidParameters.also("", "value.%s 不能超过 %d 字符")
	CredValueAPIURL     = InvalidParameters.also("", "value.apiUrl: %s")
	CredIDsOver         = InvalidParameters.also("", "credIds 一次最多 %d 条")
	CredDeleteTarget    = InvalidParameters.also("Give either {all: true}, a non-empty credIds array or credIdPrefix", "要么 { all: true }，要么 credIds 非空数组，要么 credIdPrefix")
	CredDeleteSeveral   = InvalidParameters.also("Give only one of all, credIds and credIdPrefix", "all、credIds 与 credIdPrefix 只能给一个")
	// The credRefs checks are said Under INVALID_UPDATE_DATA on a task's
	// update.
	CredRefsNotObject     = InvalidParameters.also("credRefs must be a plain object {<purpose>: <credId>}", "credRefs 必须是 { <purpose>: <credId> } 形状的普通对象")
	CredRefsEmpty         = InvalidParameters.also("credRefs must not be an empty object (leave it out instead)", "credRefs 不能是空对象（不需要就别带这个字段）")
	CredRefsOver          = InvalidParameters.also("", "credRefs 最多 %d 个条目")
	CredRefPurposeInvalid = InvalidParameters.also("", "credRefs 的 purpose 键不能超过 %d 字符、不能含控制字符")
	CredRefIDInvalid      = InvalidParameters.also("", "credRefs['%s'] 必须是 1–%d 字符、不含控制字符的 cred_id")
	CredRefsOrInline      = InvalidParameters.also("Give either credRefs.chat or the inline apiUrl / apiKey / primaryModel", "credRefs.chat 与内联的 apiUrl / apiKey / primaryModel 只能给一种")
	CredentialsLimit      = define("LLM_CREDENTIALS_LIMIT_EXCEEDED", http.StatusBadRequest, "Too many LLM credentials for this user (details: existing, adding, limit)", "单用户凭据行数超过上限")
	CredentialsLimitOf    = CredentialsLimit.also("", "单用户最多存 %d 行凭据")
	CredentialNotFound    = define("CREDENTIAL_NOT_FOUND", http.StatusConflict, "A credential credRefs names does not exist; PUT /llm-credentials first (details: credId)", "credRefs 引用的凭据不存在，请先 PUT /llm-credentials")
	CredentialNamed       = CredentialNotFound.also("", "凭据 %s 不存在，请先 PUT /llm-credentials")
	TaskUsesCredRefs      = define("TASK_USES_CRED_REFS", http.StatusConflict, "This task names its credentials by credRefs; update them with PUT /llm-credentials", "该任务通过 credRefs 引用凭据，请用 PUT /llm-credentials 更新凭据")

	// The user's language (issue 19).
	InvalidLanguage = define("INVALID_LANGUAGE", http.StatusBadRequest, "language must be a BCP 47 language tag such as en-US or zh-CN, at most 35 characters", "language 必须是 BCP 47 语言标签（如 en-US、zh-CN），最多 35 个字符")

	// The user's data inventory and cleanup (issue 20).
	InvalidCloudFilter       = define("INVALID_CLOUD_FILTER", http.StatusBadRequest, "Invalid resource filter: ownerType and ownerId go together, type must be a resource type", "资源筛选无效")
	InvalidCloudLimit        = define("INVALID_CLOUD_LIMIT", http.StatusBadRequest, "limit must be an integer from 1 to 200", "每页数量必须为 1–200")
	InvalidCloudCursor       = define("INVALID_CLOUD_CURSOR", http.StatusBadRequest, "Invalid inventory cursor", "分页游标无效")
	CloudCursorExpired       = define("CLOUD_CURSOR_EXPIRED", http.StatusConflict, "The inventory snapshot expired or the filter changed; start again without a cursor", "分页已过期或筛选变化")
	CloudRecordNotFound      = define("CLOUD_RECORD_NOT_FOUND", http.StatusNotFound, "No such cloud-data record", "云端管理记录不存在")
	InvalidCleanupMode       = define("INVALID_CLEANUP_MODE", http.StatusBadRequest, "mode must be purge or retire-owner", "清理模式无效")
	InvalidCloudOwner        = define("INVALID_CLOUD_OWNER", http.StatusBadRequest, "owner must be {type, id, label?}: type 1-100 and id 1-300 characters", "归属格式无效")
	RetireNeedsOwner         = InvalidCloudOwner.also("retire-owner needs an owner", "彻底移除需要明确归属")
	CleanupNoResources       = define("INVALID_CLEANUP_SELECTION", http.StatusBadRequest, "Select at least one resource", "请选择至少一项资源")
	CleanupBadTypes          = CleanupNoResources.also("Invalid resource types", "资源类别无效")
	CleanupNoScope           = CleanupNoResources.also("A purge needs resource ids or an owner", "清理需要明确资源或归属")
	RetireNarrowed           = CleanupNoResources.also("retire-owner cannot be narrowed to resources or types", "彻底移除不能限制资源类别")
	CleanupTooMany           = CleanupNoResources.also("Too many resources in one plan", "单次最多选择 %d 项资源")
	CloudInventoryIncomplete = define("CLOUD_INVENTORY_INCOMPLETE", http.StatusConflict, "The inventory is incomplete; no cleanup can be planned on it", "云端清单不完整，暂不能生成清理计划")
	CloudResourceNotFound    = define("CLOUD_RESOURCE_NOT_FOUND", http.StatusConflict, "Some selected resources do not exist or are out of scope", "部分选中资源不存在或不属于当前范围")
	InvalidCleanupOperation  = define("INVALID_CLEANUP_OPERATION", http.StatusBadRequest, "planId and a non-blank idempotencyKey of at most 200 characters are required", "需要计划编号与幂等键")
	IdempotencyConflict      = define("IDEMPOTENCY_CONFLICT", http.StatusConflict, "This idempotency key was used for another plan", "此幂等键已用于另一计划")
	CloudPlanExpired         = define("CLOUD_PLAN_EXPIRED", http.StatusConflict, "The cleanup preview expired; preview again", "清理预览已过期，请重新预览")
	CloudPlanChanged         = define("CLOUD_PLAN_CHANGED", http.StatusConflict, "The data changed since the preview; nothing was deleted, preview again", "预览后数据已变化，请重新预览")
	RetirementNotConfirmed   = define("CLOUD_RETIREMENT_NOT_CONFIRMED", http.StatusServiceUnavailable, "The owner's retirement is not confirmed yet; keep the local data and retry, or check the cleanup operations", "尚未确认云端停用，请保留本地角色并重试或查看云端操作记录。")
	InvalidOwnerAction       = define("INVALID_CLOUD_OWNER_ACTION", http.StatusBadRequest, "action must be restore", "归属操作无效")
	CleanupInProgress        = define("CLOUD_CLEANUP_IN_PROGRESS", http.StatusConflict, "The owner can be restored once its cleanup has finished", "清理完成后才能重新启用")
	InvalidOwnerGeneration   = define("INVALID_CLOUD_OWNER_GENERATION", http.StatusBadRequest, "ownerGeneration must be a non-negative integer", "归属代际必须是非负整数")
	InvalidCloudKind         = define("INVALID_CLOUD_KIND", http.StatusBadRequest, "kind must be a string of at most %d characters", "kind 必须是不超过 %d 字符的字符串")
	CloudOwnerRetired        = define("CLOUD_OWNER_RETIRED", http.StatusConflict, "The owner is retired or its generation changed; send the generation the restore returned", "归属已停用或代际已变化")
	CloudOwnerImmutable      = define("CLOUD_OWNER_IMMUTABLE", http.StatusConflict, "A resource's owner cannot be changed by an ordinary write", "已有资源的归属不能由普通写入更改")

	// Message timelines and receipts (issue 25).
	MessageNotFound      = define("MESSAGE_NOT_FOUND", http.StatusNotFound, "No such message, or its story is past retention", "消息不存在，或它的记录已过保留期")
	InvalidReceipts      = define("INVALID_RECEIPTS", http.StatusBadRequest, "Invalid receipt batch: receipts must be 1-50 reports {messageId, token, type: shown|clicked|dismissed, action?} (details: index, reason)", "回执批次格式无效")
	ReceiptTokenInvalid  = define("RECEIPT_TOKEN_INVALID", http.StatusForbidden, "The receipt token is not one the server issued for this message and device (details: index)", "回执令牌无效：不是服务器为这条消息和设备签发的")
	ReceiptOtherDevice   = define("RECEIPT_OTHER_DEVICE", http.StatusForbidden, "The receipt token belongs to another device than the reporting endpoint's (details: index)", "回执令牌属于另一台设备")
	ReceiptDeviceUnknown = define("RECEIPT_DEVICE_UNKNOWN", http.StatusNotFound, "The reporting device is not registered (unknown endpoint)", "报告回执的设备未登记（endpoint 未知）")

	// Signed webhooks (issue 25).
	InvalidWebhookURL    = define("INVALID_WEBHOOK_URL", http.StatusBadRequest, "url must be an https URL of a public host, without credentials (details: reason)", "webhook 地址无效：须为公网主机的 https 地址，且不带凭据（见 details.reason）")
	InvalidWebhookEvent  = define("INVALID_WEBHOOK_EVENT", http.StatusBadRequest, "events must list known webhook event types, each once (details: eventType, known)", "webhook 事件类型无效：须为已知类型且不重复（见 details）")
	WebhookNotFound      = define("WEBHOOK_NOT_FOUND", http.StatusNotFound, "No webhook endpoint has this id", "webhook 端点不存在")
	WebhookLimitExceeded = define("WEBHOOK_LIMIT_EXCEEDED", http.StatusConflict, "Too many webhook endpoints (details: limit)", "webhook 端点数量已达上限")

	// The shape of an OpenAI messages array (llm.ValidateMessages): the
	// message's index, then the tool call's (issue 26).
	MessagesNotArray           = InvalidPayloadFormat.also("messages must be a non-empty array", "messages 必须是长度 ≥ 1 的数组")
	MessagesItemNotObject      = InvalidPayloadFormat.also("messages[%[1]d] must be an object", "messages[%[1]d] 必须是对象")
	MessagesRoleInvalid        = InvalidPayloadFormat.also("messages[%[1]d].role must be one of system / user / assistant / tool", "messages[%[1]d].role 必须是 system / user / assistant / tool 之一")
	MessagesToolCallMalformed  = InvalidPayloadFormat.also("messages[%[1]d].tool_calls[%[2]d] is malformed (expected { id, type:'function', function:{ name, arguments } })", "messages[%[1]d].tool_calls[%[2]d] 形状非法 (需要 { id, type:'function', function:{ name, arguments } })")
	MessagesToolContentInvalid = InvalidPayloadFormat.also("messages[%[1]d].content (tool) must be a string or an array", "messages[%[1]d].content (tool) 必须是字符串或数组")
	MessagesToolCallIDMissing  = InvalidPayloadFormat.also("messages[%[1]d].tool_call_id is required (tool messages must reference a prior tool_call)", "messages[%[1]d].tool_call_id 必填 (tool 消息必须关联到一次 tool_call)")
	MessagesContentEmptyString = InvalidPayloadFormat.also("messages[%[1]d].content must be a non-empty string", "messages[%[1]d].content 不能是空字符串")
	MessagesContentEmptyArray  = InvalidPayloadFormat.also("messages[%[1]d].content array must be non-empty", "messages[%[1]d].content 数组不能为空")
	MessagesContentInvalidType = InvalidPayloadFormat.also("messages[%[1]d].content must be a non-empty string or a non-empty array", "messages[%[1]d].content 必须是非空字符串或长度 ≥ 1 的数组")

	// A splitPattern the standard refuses (llm.ParseSplitPattern), in its
	// Chinese; the field is splitPattern or splitPattern[i] (issue 26).
	SplitPatternTooMany   = InvalidParameters.also("", "splitPattern 数组最多 %d 项")
	SplitPatternNotString = InvalidParameters.also("", "%s 必须是字符串")
	SplitPatternTooLong   = InvalidParameters.also("", "%s 不能超过 %d 字符")
	SplitPatternNotRegexp = InvalidParameters.also("", "%s 不是有效正则表达式")

	// A cleanup operation's error, and the records of an inventory that do
	// not decrypt (its gaps), as upstream words them (issue 26).
	CleanupRetrying            = define("CLOUD_CLEANUP_FAILED", 0, "the cleanup did not finish; it is retried", "清理未完成，将会重试")
	CleanupPlanChanged         = CloudPlanChanged.also("the data changed since the preview; nothing was deleted", "预览后数据已变化，未删除任何内容")
	CleanupInventoryIncomplete = CloudInventoryIncomplete.also("the cleanup did not finish; it is retried", "清理未完成，将会重试")
	CleanupOwnerChanged        = define("CLOUD_OWNER_CHANGED", 0, "the owner changed; the old cleanup stopped", "归属已变化，旧的清理已停止")
	UnreadableOwnership        = define("UNREADABLE_OWNERSHIP", 0, "%d ownership records do not decrypt", "%d 条归属记录无法解密")
	UnreadableOperations       = define("UNREADABLE_OPERATION", 0, "%d operations do not decrypt", "%d 条清理操作无法解密")
	UnreadableOwners           = define("UNREADABLE_OWNER", 0, "%d owners do not decrypt", "%d 个归属无法解密")
	TooManyResources           = define("TOO_MANY_RESOURCES", 0, "more than %d resources; only the first are listed", "超过 %d 项资源，只列出了前面的")

	// The operator API's checks, in English whatever the request prefers:
	// the API is amsg's own, not the standard's (issue 26).
	AdminMessageBlank      = InvalidParameters.also("message must be a non-empty string", "message must be a non-empty string")
	AdminMessageLong       = InvalidParameters.also("message is longer than %d bytes", "message is longer than %d bytes")
	AdminTitleLong         = InvalidParameters.also("title is longer than 200 bytes", "title is longer than 200 bytes")
	AdminContactNameLong   = InvalidParameters.also("contactName is longer than 200 bytes", "contactName is longer than 200 bytes")
	AdminSubtypeLong       = InvalidParameters.also("messageSubtype is longer than 64 bytes", "messageSubtype is longer than 64 bytes")
	AdminMetadataNotObject = InvalidParameters.also("metadata must be a JSON object", "metadata must be a JSON object")
	AdminBodyShape         = InvalidPayloadFormat.also("The request body is not a valid JSON object of this endpoint: %s", "The request body is not a valid JSON object of this endpoint: %s")
	AdminUserIDInvalid     = InvalidParameters.also("userId must be a non-empty string of at most %d bytes", "userId must be a non-empty string of at most %d bytes")
	AdminRecipients        = InvalidParameters.also("give either userIds (a non-empty list) or all: true", "give either userIds (a non-empty list) or all: true")
	AdminTooManyUsers      = InvalidParameters.also("userIds has more than %d entries", "userIds has more than %d entries")
	AdminUserIDsInvalid    = InvalidParameters.also("every userId must be a non-empty string of at most %d bytes", "every userId must be a non-empty string of at most %d bytes")
	AdminRate              = InvalidParameters.also("ratePerSecond must be between 1 and %d", "ratePerSecond must be between 1 and %d")
	AdminPageLimit         = InvalidParameters.also("limit must be an integer from 1 to %d", "limit must be an integer from 1 to %d")
	AdminTaskStatus        = InvalidParameters.also("status must be pending, sent or failed", "status must be pending, sent or failed")
	AdminAfter             = InvalidParameters.also("after must be a task id", "after must be a task id")
	AdminHours             = InvalidParameters.also("hours must be an integer from 1 to 168", "hours must be an integer from 1 to 168")
	AdminTimelineUser      = InvalidParameters.also("userId must name the message's user", "userId must name the message's user")
	AdminDays              = InvalidParameters.also("days must be an integer from 1 to %d", "days must be an integer from 1 to %d")

	// Codes inside other answers: a task's lastError, an instant task's
	// MESSAGE_SEND_FAILED details, a client-state entry's rejection (issue 26).
	// They are no answer's own code (status 0).
	ProcessingError        = define("PROCESSING_ERROR", 0, "The delivery failed", "投递失败")
	NoContentSource        = ProcessingError.also("Invalid instant message: no content source available", "即时消息无效：没有可用的内容来源")
	PushPayloadTooLarge    = define("PUSH_PAYLOAD_TOO_LARGE", 0, "The push is too large to deliver", "推送内容过大，无法投递")
	CredentialMissing      = define("CREDENTIAL_MISSING", 0, "The credential credRefs.chat names does not exist; PUT /llm-credentials repairs the next retry", "credRefs.chat 引用的凭据不存在，PUT /llm-credentials 后下次重试即可恢复")
	CredentialNamedMissing = CredentialMissing.also("credential %q does not exist (PUT /llm-credentials repairs the next retry)", "凭据 %q 不存在（PUT /llm-credentials 后下次重试即可恢复）")
	PostSendCleanupFailed  = define("POST_SEND_CLEANUP_FAILED", 0, "The message was sent, but the task could not be cleaned up", "消息已发送，但任务清理失败")
	StateEntryNotObject    = define("INVALID_STATE_ENTRY", 0, "entries[%d] must be an object", "entries[%d] 必须是对象")
	// StateEntryRefused is an entry's owner claim refused: the entry's
	// index, then the refusal's text; said Under the refusal's code.
	StateEntryRefused     = StateEntryNotObject.also("entries[%d] %s", "entries[%d] %s")
	StateNameLength       = StateNamespaceReserved.also("entries[%d].%s must be a string of 1-%d characters", "entries[%d].%s 必须是 1-%d 字符的字符串")
	StateNameReserved     = StateNamespaceReserved.also(`entries[%d].%s must not contain control characters (\u0000-\u001f are reserved)`, `entries[%d].%s 不能包含控制字符（\u0000-\u001f 为库内部保留）`)
	InvalidStateKey       = define("INVALID_STATE_KEY", 0, "entries[%d].key is invalid", "entries[%d].key 无效")
	InvalidStateValue     = define("INVALID_STATE_VALUE", 0, "entries[%d].value must be a string (the host serializes it)", "entries[%d].value 必须是字符串（宿主自行序列化）")
	StateValueTooLarge    = define("STATE_VALUE_TOO_LARGE", 0, "entries[%d].value is over the entry limit", "entries[%d].value 超过单条总上限")
	InvalidStateUpdatedAt = define("INVALID_STATE_UPDATED_AT", 0, "entries[%d].updatedAt must be a positive integer (epoch milliseconds)", "entries[%d].updatedAt 必须是正整数（epoch 毫秒）")
	InvalidStateVersion   = define("INVALID_STATE_VERSION", 0, "entries[%d].%s must be a positive integer", "entries[%d].%s 必须是正整数")
)
