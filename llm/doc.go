// Package llm talks to OpenAI-compatible LLMs and shapes their answers into
// the text amsg pushes: the chat-completions client, reasoning extraction,
// sentence segmentation with the standard's splitPattern, and the
// messages-array shape check. The agent loop and the session transcripts
// (package llm) build on it; so does the scheduler.
//
// One call, as the scheduler makes it for a stored task:
//
//	resp, err := client.Complete(ctx, llm.Request{
//		APIURL: task.APIURL, APIKey: task.APIKey, Model: task.PrimaryModel,
//		Prompt: task.CompletePrompt, // or Messages: task.Messages
//		Temperature: task.Temperature, MaxTokens: task.MaxTokens, ExtraBody: task.LLMExtraBody,
//		RequireContent: true,
//	})
//	reasoning, text := resp.Output()         // reasoning first, then the text
//	segments, err := splitter.Split(text)    // splitter from llm.ParseSplitPattern
//
// One agent round, streamed so that each sentence is pushed as soon as it
// is complete:
//
//	var think llm.ThinkFilter
//	seg := llm.DefaultSplitter().NewSegmenter()
//	resp, err := client.Stream(ctx, llm.Request{…, Messages: history, Tools: tools, ToolChoice: choice},
//		func(d llm.Delta) error {
//			sentences, err := seg.Write(think.Write(d.Content))
//			// push each sentence …
//			return err
//		})
//	sentences, err := seg.Write(think.Flush()) // then seg.Flush()
//	history = append(history, resp.Message)    // verbatim, tool_calls included
//	// resp.ToolCalls (raw OpenAI shape) goes into a ToolRequestPush untouched;
//	// resp.Calls() decodes them; resp.Usage has the token counts.
//
// Every failure of a call is an *Error whose text is the standard's and
// whose Status is the HTTP status; errors.Is tells the kinds apart.
package llm
