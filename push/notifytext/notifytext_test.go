package notifytext

import (
	"strings"
	"testing"
)

func TestEveryLanguageHasEveryEnglishKeyWithTheSameVerbs(t *testing.T) {
	for lang, table := range tables {
		for key, en := range tables[English] {
			text, ok := table[key]
			if !ok {
				t.Errorf("%s lacks %q", lang, key)
				continue
			}
			if strings.Count(text, "%") != strings.Count(en, "%") {
				t.Errorf("%s %q = %q: its verbs differ from English %q", lang, key, text, en)
			}
		}
		for key := range table {
			if _, ok := tables[English][key]; !ok {
				t.Errorf("%s has %q, which English lacks", lang, key)
			}
		}
	}
}

func TestLanguage(t *testing.T) {
	for tag, want := range map[string]string{
		"":                      "en",
		"en":                    "en",
		"en-GB":                 "en",
		"zh":                    "zh",
		"zh-CN":                 "zh",
		"ZH_tw":                 "zh",
		"zh-Hant-TW":            "zh",
		"zh-CN,zh;q=0.9,en;q=8": "zh",
		"fr-FR":                 "en",
		"de;q=1":                "en",
	} {
		if got := Language(tag); got != want {
			t.Errorf("Language(%q) = %q, want %q", tag, got, want)
		}
	}
}

func TestText(t *testing.T) {
	if got := Text("zh-CN", FromContact, "Rei"); got != "来自 Rei" {
		t.Errorf("zh-CN FromContact = %q", got)
	}
	if got := Text("en-US", FromContact, "Rei"); got != "From Rei" {
		t.Errorf("en-US FromContact = %q", got)
	}
	if got := Text("fr", Receiving); got != "Receiving a message…" {
		t.Errorf("fr Receiving = %q, want the English fallback", got)
	}
}
