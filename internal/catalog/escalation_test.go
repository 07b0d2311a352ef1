package catalog

import (
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/heraldhq/herald/internal/domain"
)

const escalationHead = `
type: x.y
priority: %PRIORITY%
mandatory: %MANDATORY%
channels: %CHANNELS%
variables:
  url: {kind: url}
escalation:
%ESCALATION%
templates:
  en:
    email: {subject: "s", text: "t {{.url}}", html: "<p>{{.url}}</p>"}
    push: {title: "t", body: "b", url: "{{.url}}"}
    inapp: {title: "t", body: "b", url: "{{.url}}"}
`

func escalationYAML(priority, mandatory, channels, escalation string) string {
	return strings.NewReplacer("%PRIORITY%", priority, "%MANDATORY%", mandatory, "%CHANNELS%", channels, "%ESCALATION%", escalation).Replace(escalationHead)
}

func TestEscalationParsesAndLints(t *testing.T) {
	tests := []struct {
		name                                      string
		priority, mandatory, channels, escalation string
		wantLoad                                  string // substring of the load error, "" loads
		wantLint                                  string // substring of the lint error, "" passes
		want                                      map[domain.Channel]Escalation
	}{
		{name: "normal type, both rules", priority: "normal", mandatory: "false", channels: "[push, email]",
			escalation: "  push: {unlessActiveWithin: 2m}\n  email: {after: 30m, unlessRead: true}",
			want: map[domain.Channel]Escalation{
				domain.ChannelPush:  {UnlessActiveWithin: 2 * time.Minute},
				domain.ChannelEmail: {After: 30 * time.Minute, UnlessRead: true}}},
		{name: "high priority, only external channel conditional", priority: "high", mandatory: "false", channels: "[push]",
			escalation: "  push: {unlessActiveWithin: 2m}", wantLint: "only external channel"},
		{name: "mandatory, only external channel unlessRead", priority: "normal", mandatory: "true", channels: "[email]",
			escalation: "  email: {after: 5m, unlessRead: true}", wantLint: "only external channel"},
		{name: "mandatory, only external channel delayed", priority: "normal", mandatory: "true", channels: "[email]",
			escalation: "  email: {after: 5m}"},
		{name: "mandatory, every external channel conditional", priority: "normal", mandatory: "true", channels: "[push, email]",
			escalation: "  push: {unlessActiveWithin: 2m}\n  email: {after: 30m, unlessRead: true}", wantLint: "every external channel"},
		{name: "high priority, a second channel stays unconditional", priority: "high", mandatory: "false", channels: "[push, email]",
			escalation: "  push: {unlessActiveWithin: 2m}"},
		{name: "channel not in channels", priority: "normal", mandatory: "false", channels: "[push]",
			escalation: "  email: {after: 5m}", wantLoad: "not one of the type's channels"},
		{name: "negative delay", priority: "normal", mandatory: "false", channels: "[push]",
			escalation: "  push: {after: -5m}", wantLoad: "positive duration"},
		{name: "delay beyond a week", priority: "normal", mandatory: "false", channels: "[push]",
			escalation: "  push: {after: 200h}", wantLoad: "positive duration"},
		{name: "empty rule", priority: "normal", mandatory: "false", channels: "[push]",
			escalation: "  push: {}", wantLoad: "empty rule"},
		{name: "conditions on a digestible type", priority: "low", mandatory: "false\ndigestible: true", channels: "[push]",
			escalation: "  push: {unlessRead: true}", wantLoad: "not allowed on a digestible type"},
		{name: "unknown field", priority: "normal", mandatory: "false", channels: "[push]",
			escalation: "  push: {unlessSeen: 2m}", wantLoad: "unlessSeen"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			yaml := escalationYAML(tt.priority, tt.mandatory, tt.channels, tt.escalation)
			c, err := LoadFS(fstest.MapFS{"types/x.y.yaml": {Data: []byte(yaml)}}, "types")
			if tt.wantLoad != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantLoad) {
					t.Fatalf("load error %v, want one mentioning %q", err, tt.wantLoad)
				}
				return
			}
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			errs := c.Lint()
			switch {
			case tt.wantLint == "" && len(errs) > 0:
				t.Fatalf("lint: %v", errs)
			case tt.wantLint != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), tt.wantLint)):
				t.Fatalf("lint %v, want one error mentioning %q", errs, tt.wantLint)
			}
			typ, _ := c.Lookup("x.y")
			for ch, want := range tt.want {
				if got := typ.EscalationOf(ch); got != want {
					t.Errorf("%s: %+v, want %+v", ch, got, want)
				}
			}
		})
	}
}

func TestShippedCommentMentioned(t *testing.T) {
	typ, ok := MustLoad().Lookup("comment.mentioned")
	if !ok {
		t.Fatal("comment.mentioned is not in the catalog")
	}
	if typ.Priority != domain.PriorityNormal || typ.Mandatory {
		t.Errorf("priority %s mandatory %v", typ.Priority, typ.Mandatory)
	}
	if e := typ.EscalationOf(domain.ChannelPush); e != (Escalation{UnlessActiveWithin: 2 * time.Minute}) {
		t.Errorf("push %+v", e)
	}
	if e := typ.EscalationOf(domain.ChannelEmail); e != (Escalation{After: 30 * time.Minute, UnlessRead: true}) {
		t.Errorf("email %+v", e)
	}
}
