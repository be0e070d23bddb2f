package api

// errorText is one message of an error code in both languages: English,
// which clients get by default, and Chinese, the standard's exact text,
// which they get when Accept-Language prefers zh.
type errorText struct {
	Code string
	EN   string
	ZH   string
}

// errorTable is every error code amsg answers with, each with its messages.
// A code's first row is its default: writeError falls back to it for a
// message the table does not list (a formatted one, or one a producer such
// as the agent loop wrote). The further rows of a code are the other
// messages handlers give it, matched on the Chinese text.
var errorTable = []errorText{
	// Routing and the process.
	{"NOT_FOUND", "Unknown route", "Unknown route"},
	{"METHOD_NOT_ALLOWED", "Only POST is supported", "Only POST is supported"},
	{"INTERNAL_ERROR", "Internal server error", "服务器内部错误"},
	{"INIT_FAILED", "The database schema check failed", "数据库结构检查失败"},

	// Authorization.
	{"INVALID_CLIENT_TOKEN", "Missing or invalid shared secret", "共享密钥无效或缺失"},
	{"INVALID_CLIENT_TOKEN", "Missing X-Client-Token", "缺少 X-Client-Token"},
	{"INVALID_CLIENT_TOKEN", "Invalid X-Client-Token", "X-Client-Token 无效"},
	{"UNAUTHORIZED", "Missing or invalid Bearer token", "token 已过期或无效"},
	{"UNAUTHORIZED", "Missing Authorization: Bearer <token>", "缺少 Authorization: Bearer <token>"},
	{"UNAUTHORIZED", "Empty Bearer token", "空 Bearer token"},
	{"UNAUTHORIZED", "Malformed token", "token 格式无效"},
	{"UNAUTHORIZED", "Malformed token signature", "token 签名格式无效"},
	{"UNAUTHORIZED", "Invalid token signature", "token 签名无效"},
	{"UNAUTHORIZED", "Unreadable token payload", "token payload 解析失败"},
	{"INVALID_ADMIN_TOKEN", "Missing or invalid operator token", "管理令牌无效或缺失"},
	{"RATE_LIMITED", "Too many requests; retry later", "请求过于频繁，请稍后再试"},
	{"QUOTA_EXCEEDED", "Quota exceeded", "已超出配额"},
	{"REQUEST_TIMEOUT", "The request body did not arrive in time", "请求体未在限定时间内送达"},
	{"UNSUPPORTED_MEDIA_TYPE", "Content-Type must be application/json", "Content-Type 必须是 application/json"},

	// The user id and the encrypted request envelope.
	{"USER_ID_REQUIRED", "Missing user id (X-User-Id)", "缺少用户标识符"},
	{"INVALID_USER_ID_FORMAT", "Invalid user id: it must be a UUID v4", "用户标识符格式无效，必须是 UUID v4"},
	{"ENCRYPTION_REQUIRED", "The request body must be encrypted", "请求体必须加密"},
	{"UNSUPPORTED_ENCRYPTION_VERSION", "Unsupported encryption version", "加密版本不支持"},
	{"INVALID_ENCRYPTED_PAYLOAD", "Malformed encrypted payload", "加密数据格式错误"},
	{"DECRYPTION_FAILED", "The request body could not be decrypted", "请求体解密失败"},

	// Request bodies.
	{"INVALID_PAYLOAD_FORMAT", "Invalid request payload", "请求体格式错误"},
	{"INVALID_PAYLOAD_FORMAT", "The decrypted data is not valid JSON", "解密后的数据不是合法 JSON"},
	{"INVALID_PAYLOAD_FORMAT", "The decrypted data must be a JSON object", "解密后的数据必须是 JSON 对象"},
	{"INVALID_PAYLOAD_FORMAT", "The request body is not valid JSON", "请求体不是合法 JSON"},
	{"INVALID_PAYLOAD_FORMAT", "The request body could not be read", "无法读取请求体"},
	{"INVALID_PAYLOAD_FORMAT", "The payload must be a JSON object", "payload 必须是 JSON 对象"},
	{"INVALID_PAYLOAD_FORMAT", "The tool results do not match the tool calls the session waits for", "工具结果与会话等待的工具调用不符"},
	{"INVALID_PAYLOAD_FORMAT", "sessionId is required and must be a non-empty string", "sessionId 必填且为非空字符串"},
	{"INVALID_PAYLOAD_FORMAT", "contactName is required", "contactName 必填"},
	{"INVALID_PAYLOAD_FORMAT", "completePrompt must be a non-empty string", "completePrompt 必须是非空字符串"},
	{"INVALID_PAYLOAD_FORMAT", "temperature must be a finite number", "temperature 必须是有限数字"},
	{"INVALID_PAYLOAD_FORMAT", "pushSubscription must be a valid Web Push subscription", "pushSubscription 必须是合法 Web Push 订阅对象"},
	{"INVALID_PAYLOAD_FORMAT", "messageSubtype must be a string", "messageSubtype 必须是字符串"},
	{"INVALID_PAYLOAD_FORMAT", "metadata must be a plain object", "metadata 必须是普通对象"},
	{"INVALID_PAYLOAD_FORMAT", "tools must be an array", "tools 必须是数组"},
	{"COMPLETE_PROMPT_NOT_SUPPORTED_ON_HOOK_PATH", "completePrompt is not accepted on /continue; pass a `messages` array directly", "completePrompt is not accepted on /continue; pass a `messages` array directly"},
	{"PAYLOAD_TOO_LARGE", "The payload is too large", "请求体过大"},
	{"INVALID_API_URL", "apiUrl is not an allowed LLM endpoint", "apiUrl 不是允许的 LLM 地址"},

	// Tasks.
	{"INVALID_PARAMETERS", "Missing or invalid parameters", "缺少必需参数或参数格式错误"},
	{"INVALID_PARAMETERS", `The body must be {"endpoint": the push endpoint URL}`, `请求体必须是 {"endpoint": 推送端点 URL}`},
	{"INVALID_PARAMETERS", "immediate must be a boolean", "immediate 必须是布尔值"},
	{"INVALID_PARAMETERS", "messageType 'instant' is delivered at once and cannot carry immediate", "messageType 'instant' 本就立即投递，不能再带 immediate"},
	{"INVALID_PARAMETERS", "supersedesUuid must be a valid UUID", "supersedesUuid 必须是合法 UUID"},
	{"INVALID_PARAMETERS", "supersedesUuid must differ from the task's uuid", "supersedesUuid 不能与本条任务的 uuid 相同"},
	{"INVALID_PARAMETERS", "tzId must be an IANA time zone id (such as Asia/Tokyo)", "tzId 必须是可用的 IANA 时区 id（如 Asia/Tokyo）"},
	{"INVALID_PARAMETERS", `recurrenceType "cron" needs cronExpr (a five-field cron expression such as "0 9 * * 1-5")`, `recurrenceType "cron" 需要 cronExpr（五段 cron 表达式，如 "0 9 * * 1-5"）`},
	{"INVALID_PARAMETERS", `cronExpr must be a five-field cron expression such as "0 9 * * 1-5"`, `cronExpr 必须是五段 cron 表达式，如 "0 9 * * 1-5"`},
	{"INVALID_PARAMETERS", `cronExpr is only for recurrenceType "cron"`, `cronExpr 只用于 recurrenceType "cron"`},
	{"INVALID_PARAMETERS", `recurrenceType must be "none" for an instant task`, "instant 类型的 recurrenceType 必须为 none"},
	{"INVALID_PARAMETERS", "An instant task needs userMessage or a complete AI configuration", "instant 类型必须提供 userMessage 或完整的 AI 配置"},
	{"INVALID_PARAMETERS", "llmExtraBody must be a plain object", "llmExtraBody 必须是普通对象"},
	{"INVALID_PARAMETERS", "metadata must be a plain object", "metadata 必须是普通对象"},
	{"INVALID_PARAMETERS", "limit must be a positive integer", "limit 参数无效，必须为正整数"},
	{"INVALID_PARAMETERS", "offset must be a non-negative integer", "offset 参数无效，必须为非负整数"},
	{"INVALID_TIMESTAMP", "Invalid time", "时间格式无效"},
	{"INVALID_TIMESTAMP", "The time must be in the future", "时间必须在未来"},
	{"INVALID_MESSAGE_TYPE", "Invalid message type", "消息类型无效"},
	{"INVALID_UPDATE_DATA", "Invalid update data", "更新数据格式错误"},
	{"TASK_ID_REQUIRED", "Missing task id", "缺少任务ID"},
	{"TASK_NOT_FOUND", "The task does not exist or was deleted", "指定的任务不存在或已被删除"},
	{"TASK_UUID_CONFLICT", "A task with this UUID already exists; submit again with a new uuid", "任务 UUID 已存在，请使用新的 uuid 重新提交"},
	{"TASK_ALREADY_COMPLETED", "The task has completed or failed and cannot be updated", "任务已完成或已失败，无法更新"},
	{"TASK_ALREADY_COMPLETED", "The task has completed or failed", "任务已完成或已失败"},
	{"MESSAGE_SEND_FAILED", "The message could not be sent", "消息发送失败"},

	// Push subscriptions and delivery.
	{"INVALID_PUSH_SUBSCRIPTION", "Invalid push subscription", "推送订阅格式无效"},
	{"INVALID_UPDATED_AT", "updatedAt must be a positive integer (milliseconds)", "updatedAt 必须是正整数（毫秒时间戳）"},
	{"PUSH_SUBSCRIPTION_MISSING", "This user has no registered push subscription (PUT /push-subscription)", "该用户还没有登记推送订阅（PUT /push-subscription）"},
	{"PUSH_SUBSCRIPTION_LOOKUP_FAILED", "The push subscription could not be read; retry later", "推送订阅读取失败，请稍后重试"},
	{"PUSH_SUBSCRIPTION_NOT_FOUND", "This device has no registered push subscription (PUT /push-subscription)", "该设备未登记推送订阅（PUT /push-subscription）"},
	{"PUSH_SUBSCRIPTION_NOT_ACCEPTED", "pushSubscription is no longer updated with a task; use PUT /push-subscription to replace the user's subscription", "pushSubscription 不再随任务更新，改用 PUT /push-subscription 覆盖用户级订阅"},
	{"PUSH_SEND_FAILED", "Web Push delivery failed", "Web Push 推送失败"},
	{"LLM_CALL_FAILED", "The LLM call failed", "LLM 调用失败"},
	{"LOOP_EXCEEDED", "The agent loop reached its iteration limit", "代理循环已达到最大轮数"},
	{"BUDGET_EXHAUSTED", "The session's token budget is exhausted", "会话的 token 预算已用完"},

	// Sessions.
	{"SESSION_NOT_FOUND", "The session does not exist or has expired", "会话不存在或已过期"},
	{"CONCURRENT_CONTINUE", "This round was handled by another /continue, or the session is not waiting for tool results", "这一轮已由另一个 /continue 处理，或会话没有在等待工具结果"},

	// Client state and the outbox.
	{"INVALID_STATE_ENTRIES", "entries must be a non-empty array", "entries 必须是非空数组"},
	{"TOO_MANY_STATE_ENTRIES", "Too many entries in one request", "单次条目过多"},
	{"NAMESPACE_REQUIRED", "The namespace query parameter is required", "必须提供 namespace 查询参数"},
	{"INVALID_STATE_NAMESPACE", `namespace must not contain control characters (\u0000-\u001f are reserved)`, `namespace 不能包含控制字符（\u0000-\u001f 为库内部保留）`},
	{"INVALID_OUTBOX_CURSOR", "since must be a non-negative integer (the cursor of the previous page)", "since 必须是非负整数（上一页响应里的 cursor）"},
	{"INVALID_OUTBOX_LIMIT", "limit is out of range", "limit 超出范围"},
	{"INVALID_OUTBOX_ACK", "messageIds must be a non-empty array", "messageIds 必须是非空数组"},
	{"INVALID_OUTBOX_ACK", "Every item of messageIds must be a non-empty string", "messageIds 的每一项必须是非空字符串"},
	{"TOO_MANY_OUTBOX_ACK_IDS", "Too many messageIds in one request", "单次 ack 条目过多"},

	// The operator API.
	{"USER_NOT_FOUND", "No such user", "用户不存在"},
	{"BROADCAST_NOT_FOUND", "No such broadcast", "广播不存在"},

	// Control of what fires (issue 18).
	{"TASK_IN_FLIGHT", "The task is being delivered; change its time once this occurrence is done", "任务正在投递中，暂时不能修改发送时间，请稍后重试"},

	// Quiet hours, daily limits, priorities and idempotency keys (issue 18).
	{"UNKNOWN_PREFERENCE", "Unknown preference (only timeZone, quietHours and dailyLimit)", "未知的偏好设置字段（只接受 timeZone、quietHours、dailyLimit）"},
	{"INVALID_TIME_ZONE", "timeZone must be an IANA time zone id (such as Asia/Tokyo), or null", "timeZone 必须是可用的 IANA 时区 id（如 Asia/Tokyo），或 null"},
	{"INVALID_QUIET_HOURS", `quietHours must be {"start":"HH:MM","end":"HH:MM"} (00:00 to 23:59), or null`, `quietHours 必须是 {"start":"HH:MM","end":"HH:MM"}（00:00 至 23:59），或 null`},
	{"QUIET_HOURS_EMPTY", "quietHours start and end must differ", "quietHours 的 start 与 end 不能相同"},
	{"INVALID_DAILY_LIMIT", "dailyLimit must be an integer from 0 to 100000, or null", "dailyLimit 必须是 0 到 100000 的整数，或 null"},
	{"INVALID_PRIORITY", `priority must be "normal" or "critical"`, `priority 必须是 "normal" 或 "critical"`},
	{"INVALID_IDEMPOTENCY_KEY", "Idempotency-Key must be 1 to 255 printable ASCII characters", "Idempotency-Key 必须是 1 到 255 个可打印 ASCII 字符"},
	{"IDEMPOTENCY_KEY_TOO_LONG", "Idempotency-Key must not be longer than 255 characters", "Idempotency-Key 不能超过 255 个字符"},
	{"IDEMPOTENCY_KEY_REUSED", "This Idempotency-Key was used for another request", "该 Idempotency-Key 已用于另一个请求"},
	{"IDEMPOTENCY_KEY_IN_USE", "A request with this Idempotency-Key is still being processed; retry later", "使用该 Idempotency-Key 的请求仍在处理中，请稍后重试"},

	// Approvals (issue 21).
	{"INVALID_APPROVAL_TOOLS", "approvalTools must name functions declared in tools, and the request must carry X-User-Id", "approvalTools 必须列出 tools 中声明的函数名，且请求须带 X-User-Id"},
	{"INVALID_APPROVAL_TIMEOUT", "approvalTimeoutSeconds is out of range", "approvalTimeoutSeconds 超出允许范围"},
	{"INTERRUPT_NOT_FOUND", "No such approval, or it was pruned", "审批不存在或已被清理"},
	{"INTERRUPT_TOKEN_INVALID", "The decision token is invalid or belongs to another approval", "决定令牌无效，或不属于这个审批"},
	{"INTERRUPT_ALREADY_DECIDED", "This approval has already been decided", "这个审批已经有了决定"},
	{"INTERRUPT_EXPIRED", "This approval has expired", "这个审批已过期"},
	{"INVALID_INTERRUPT_STATUS", `status supports only "pending"`, `status 只支持 "pending"`},
	{"INVALID_PAYLOAD_FORMAT", `decision must be "approve" or "deny"`, `decision 必须是 "approve" 或 "deny"`},
	{"INVALID_PAYLOAD_FORMAT", "token is required", "token 必填"},
	{"INVALID_PAYLOAD_FORMAT", "token must be a non-empty string", "token 必须是非空字符串"},
	{"INVALID_PAYLOAD_FORMAT", "reason must be a string of at most 1000 characters", "reason 必须是不超过 1000 字的字符串"},
	{"INVALID_PAYLOAD_FORMAT", "endpoint must be a string", "endpoint 必须是字符串"},

	// Hostile callers, round two (issue 22).
	{"PUSH_SUBSCRIPTION_CONFLICT", "This push endpoint is registered by another user with other keys", "该推送端点已由另一用户以不同密钥登记"},
	{"INVALID_PARAMETERS", "deviceId must be a positive integer", "deviceId 必须是正整数"},

	// Upstream's newest line: client state, outbox, credentials, gzip (issue 20).
	{"INVALID_STATE_NAMESPACE", "namespace must be a string of 1-128 characters", "namespace 必须是 1-128 字符的字符串"},
	{"INVALID_NAMESPACE_LIMIT", "limit must be an integer from 1 to 200", "limit 必须是 1-200 的整数"},
	{"INVALID_PARAMETERS", "Give either {all: true} or a non-empty messageIds array", "要么 { all: true }，要么 messageIds 非空数组"},
	{"INVALID_PARAMETERS", "all and messageIds cannot be given together", "all 与 messageIds 不能同时出现"},
	{"UNSUPPORTED_CONTENT_ENCODING", "Unsupported Content-Encoding (only gzip is accepted)", "不支持的 Content-Encoding（只支持 gzip）"},
	{"INVALID_CONTENT_ENCODING", "The request body is not valid gzip data", "请求体不是有效的 gzip 数据"},
	{"TASK_PAYLOAD_TOO_LARGE", "The task is larger than the limit (details: bytes, maxBytes)", "任务内容超过字节上限"},
	{"INVALID_PARAMETERS", "credentials must be a non-empty array", "credentials 必须是非空数组"},
	{"INVALID_PARAMETERS", "Give either {all: true}, a non-empty credIds array or credIdPrefix", "要么 { all: true }，要么 credIds 非空数组，要么 credIdPrefix"},
	{"INVALID_PARAMETERS", "Give only one of all, credIds and credIdPrefix", "all、credIds 与 credIdPrefix 只能给一个"},
	{"INVALID_PARAMETERS", "credRefs must be a plain object {<purpose>: <credId>}", "credRefs 必须是 { <purpose>: <credId> } 形状的普通对象"},
	{"INVALID_PARAMETERS", "credRefs must not be an empty object (leave it out instead)", "credRefs 不能是空对象（不需要就别带这个字段）"},
	{"INVALID_PARAMETERS", "Give either credRefs.chat or the inline apiUrl / apiKey / primaryModel", "credRefs.chat 与内联的 apiUrl / apiKey / primaryModel 只能给一种"},
	{"INVALID_UPDATE_DATA", "Give either credRefs.chat or the inline apiUrl / apiKey / primaryModel", "credRefs.chat 与内联的 apiUrl / apiKey / primaryModel 只能给一种"},
	{"LLM_CREDENTIALS_LIMIT_EXCEEDED", "Too many LLM credentials for this user (details: existing, adding, limit)", "单用户凭据行数超过上限"},
	{"CREDENTIAL_NOT_FOUND", "A credential credRefs names does not exist; PUT /llm-credentials first (details: credId)", "credRefs 引用的凭据不存在，请先 PUT /llm-credentials"},
	{"TASK_USES_CRED_REFS", "This task names its credentials by credRefs; update them with PUT /llm-credentials", "该任务通过 credRefs 引用凭据，请用 PUT /llm-credentials 更新凭据"},

	// The user's language (issue 19).
	{"INVALID_LANGUAGE", "language must be a BCP 47 language tag such as en-US or zh-CN, at most 35 characters", "language 必须是 BCP 47 语言标签（如 en-US、zh-CN），最多 35 个字符"},

	// The user's data inventory and cleanup (issue 20).
	{"INVALID_CLOUD_FILTER", "Invalid resource filter: ownerType and ownerId go together, type must be a resource type", "资源筛选无效"},
	{"INVALID_CLOUD_LIMIT", "limit must be an integer from 1 to 200", "每页数量必须为 1–200"},
	{"INVALID_CLOUD_CURSOR", "Invalid inventory cursor", "分页游标无效"},
	{"CLOUD_CURSOR_EXPIRED", "The inventory snapshot expired or the filter changed; start again without a cursor", "分页已过期或筛选变化"},
	{"CLOUD_RECORD_NOT_FOUND", "No such cloud-data record", "云端管理记录不存在"},
	{"INVALID_CLEANUP_MODE", "mode must be purge or retire-owner", "清理模式无效"},
	{"INVALID_CLOUD_OWNER", "owner must be {type, id, label?}: type 1-100 and id 1-300 characters", "归属格式无效"},
	{"INVALID_CLOUD_OWNER", "retire-owner needs an owner", "彻底移除需要明确归属"},
	{"INVALID_CLEANUP_SELECTION", "Select at least one resource", "请选择至少一项资源"},
	{"INVALID_CLEANUP_SELECTION", "Invalid resource types", "资源类别无效"},
	{"INVALID_CLEANUP_SELECTION", "A purge needs resource ids or an owner", "清理需要明确资源或归属"},
	{"INVALID_CLEANUP_SELECTION", "retire-owner cannot be narrowed to resources or types", "彻底移除不能限制资源类别"},
	{"INVALID_CLEANUP_SELECTION", "Too many resources in one plan", "单次最多选择 1000 项资源"},
	{"CLOUD_INVENTORY_INCOMPLETE", "The inventory is incomplete; no cleanup can be planned on it", "云端清单不完整，暂不能生成清理计划"},
	{"CLOUD_RESOURCE_NOT_FOUND", "Some selected resources do not exist or are out of scope", "部分选中资源不存在或不属于当前范围"},
	{"INVALID_CLEANUP_OPERATION", "planId and a non-blank idempotencyKey of at most 200 characters are required", "需要计划编号与幂等键"},
	{"IDEMPOTENCY_CONFLICT", "This idempotency key was used for another plan", "此幂等键已用于另一计划"},
	{"CLOUD_PLAN_EXPIRED", "The cleanup preview expired; preview again", "清理预览已过期，请重新预览"},
	{"CLOUD_PLAN_CHANGED", "The data changed since the preview; nothing was deleted, preview again", "预览后数据已变化，请重新预览"},
	{"CLOUD_RETIREMENT_NOT_CONFIRMED", "The owner's retirement is not confirmed yet; keep the local data and retry, or check the cleanup operations", "尚未确认云端停用，请保留本地角色并重试或查看云端操作记录。"},
	{"INVALID_CLOUD_OWNER_ACTION", "action must be restore", "归属操作无效"},
	{"CLOUD_CLEANUP_IN_PROGRESS", "The owner can be restored once its cleanup has finished", "清理完成后才能重新启用"},
	{"INVALID_CLOUD_OWNER_GENERATION", "ownerGeneration must be a non-negative integer", "归属代际必须是非负整数"},
	{"INVALID_CLOUD_KIND", "kind must be a string of at most 100 characters", "kind 必须是不超过 100 字符的字符串"},
	{"CLOUD_OWNER_RETIRED", "The owner is retired or its generation changed; send the generation the restore returned", "归属已停用或代际已变化"},
	{"CLOUD_OWNER_IMMUTABLE", "A resource's owner cannot be changed by an ordinary write", "已有资源的归属不能由普通写入更改"},

	// Message timelines and receipts (issue 25).
	{"MESSAGE_NOT_FOUND", "No such message, or its story is past retention", "消息不存在，或它的记录已过保留期"},
	{"INVALID_RECEIPTS", "Invalid receipt batch: receipts must be 1-50 reports {messageId, token, type: shown|clicked|dismissed, action?} (details: index, reason)", "回执批次格式无效"},
	{"RECEIPT_TOKEN_INVALID", "The receipt token is not one the server issued for this message and device (details: index)", "回执令牌无效：不是服务器为这条消息和设备签发的"},
	{"RECEIPT_OTHER_DEVICE", "The receipt token belongs to another device than the reporting endpoint's (details: index)", "回执令牌属于另一台设备"},
	{"RECEIPT_DEVICE_UNKNOWN", "The reporting device is not registered (unknown endpoint)", "报告回执的设备未登记（endpoint 未知）"},

	// Signed webhooks (issue 25).
	{"INVALID_WEBHOOK_URL", "url must be an https URL of a public host, without credentials (details: reason)", "webhook 地址无效：须为公网主机的 https 地址，且不带凭据（见 details.reason）"},
	{"INVALID_WEBHOOK_EVENT", "events must list known webhook event types, each once (details: eventType, known)", "webhook 事件类型无效：须为已知类型且不重复（见 details）"},
	{"WEBHOOK_NOT_FOUND", "No webhook endpoint has this id", "webhook 端点不存在"},
	{"WEBHOOK_LIMIT_EXCEEDED", "Too many webhook endpoints (details: limit)", "webhook 端点数量已达上限"},
}
