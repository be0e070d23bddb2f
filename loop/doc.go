// Package loop runs the agent loop behind /instant and /continue and keeps
// the session transcripts: an Agent starts or resumes a session, streams
// one round from the LLM (package llm), pushes each sentence once the next
// has begun, and records the round; Transcripts stores every round amsg
// runs, the scheduler's included, sealed with the owner's key.
package loop
