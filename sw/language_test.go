package sw_test

import (
	"testing"
)

// The texts the worker writes itself follow the browser's language, from
// the table the server uses, and so does amsg's own title in a payload the
// page bridged from its stream; a producer's title stays; a language
// without a table gets English.
func TestWorkerTextsFollowTheBrowsersLanguage(t *testing.T) {
	srv := newTestServer(t, "v-language")
	_, p := openWorkerPage(t, srv)
	for _, tt := range []struct {
		language, title, body, receiving string
	}{
		{"zh-CN", "来自 Rei", "Rei 需要这台设备继续", "正在接收消息…"},
		{"en-US", "From Rei", "Rei needs this device to continue", "Receiving a message…"},
		{"fr-FR", "From Rei", "Rei needs this device to continue", "Receiving a message…"},
	} {
		var got struct{ Title, Body, Receiving, Bridged, Producers string }
		p.WorkerEval(`(() => {
			Object.defineProperty(self.navigator, 'language', { value: `+jsString(tt.language)+`, configurable: true });
			const tool = { messageKind: 'tool_request', messageId: 'm', sessionId: 's', contactName: 'Rei', toolCalls: [] };
			const quiet = self.__amsgTest.buildQuietNotification(tool);
			const chunk = self.__amsgTest.buildFallbackNotification({ messageKind: '_multipart', multipart: { id: 'x' }, chunk: '' });
			const bridged = self.__amsgTest.buildNotification({ messageKind: 'content', messageId: 'b', contactName: 'Rei', title: 'From Rei', message: 'hi' });
			const producers = self.__amsgTest.buildNotification({ messageKind: 'content', messageId: 'p', contactName: 'Rei', title: 'Rei says', message: 'hi' });
			return { title: quiet.title, body: quiet.options.body, receiving: chunk.options.body, bridged: bridged.title, producers: producers.title };
		})()`, &got)
		if got.Title != tt.title || got.Body != tt.body || got.Receiving != tt.receiving || got.Bridged != tt.title || got.Producers != "Rei says" {
			t.Errorf("%s: %+v", tt.language, got)
		}
	}
}
