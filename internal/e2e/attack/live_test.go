package attack

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/coder/websocket"

	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/live"
)

// dialLive opens the live inbox's WebSocket with token (none when empty)
// and returns the connection, or the handshake's HTTP status when refused.
func dialLive(t testing.TB, token string) (*websocket.Conn, int) {
	t.Helper()
	u := stacktest.Stack(t).WebSocketURL
	if token != "" {
		u += "?token=" + token
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, u, nil)
	if err != nil {
		if resp == nil {
			t.Fatalf("dial: %v", err)
		}
		return nil, resp.StatusCode
	}
	t.Cleanup(func() { _ = c.CloseNow() })
	return c, http.StatusSwitchingProtocols
}

// messages reads a connection's messages into a channel until it closes.
func messages(c *websocket.Conn) <-chan live.Message {
	out := make(chan live.Message, 16)
	go func() {
		defer close(out)
		for {
			_, data, err := c.Read(context.Background())
			if err != nil {
				return
			}
			var m live.Message
			if json.Unmarshal(data, &m) == nil {
				out <- m
			}
		}
	}()
	return out
}

func next(t testing.TB, ch <-chan live.Message, within time.Duration, what string) live.Message {
	t.Helper()
	select {
	case m, ok := <-ch:
		if !ok {
			t.Fatalf("%s: the connection closed", what)
		}
		return m
	case <-time.After(within):
		t.Fatalf("%s: nothing within %s", what, within)
	}
	return live.Message{}
}

// TestLiveInboxReachesOnlyItsUser: two users each with a socket; a
// notification to A reaches A's socket within 2 seconds with the badge, and
// never B's; marking it read reaches A as an update with the new badge.
func TestLiveInboxReachesOnlyItsUser(t *testing.T) {
	st := stacktest.Stack(t)
	a, b := stacktest.UniqueID("live-a"), stacktest.UniqueID("live-b")
	ca, status := dialLive(t, st.Token(a, time.Hour))
	if ca == nil {
		t.Fatalf("A's connect refused: %d", status)
	}
	cb, status := dialLive(t, st.Token(b, time.Hour))
	if cb == nil {
		t.Fatalf("B's connect refused: %d", status)
	}
	ma, mb := messages(ca), messages(cb)
	// The $connect function records the connection before the upgrade
	// completes, so a post right away finds it.
	start := time.Now()
	id := stacktest.Notify(t, map[string]any{
		"type": "security.login_alert", "channels": []string{"email"},
		"recipient": map[string]any{"userId": a, "email": a + "@example.com"},
		"data":      map[string]any{"url": "https://example.com/s/1"},
	})
	got := next(t, ma, 2*time.Second, "A's inbox.created")
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("A's message after %s, want within 2 s", elapsed)
	}
	if got.Kind != live.KindCreated || got.ID != id || got.Unread.Count != 1 || got.Unread.Display != "1" {
		t.Errorf("A got %+v, want inbox.created %s with unread 1", got, id)
	}
	if status, raw, _ := request(t, http.MethodPost, "/v1/users/"+a+"/inbox/"+id+"/read", nil,
		http.Header{"Authorization": {"Bearer " + st.Token(a, time.Hour)}}); status != http.StatusOK {
		t.Fatalf("read: %d %s", status, raw)
	}
	got = next(t, ma, 2*time.Second, "A's inbox.updated")
	if got.Kind != live.KindUpdated || got.ID != id || got.Unread.Count != 0 {
		t.Errorf("A got %+v, want inbox.updated %s with unread 0", got, id)
	}
	select {
	case m := <-mb:
		t.Fatalf("B received A's item: %+v", m)
	case <-time.After(300 * time.Millisecond):
	}
	// The posts went through the poster's role (IAM checked locally).
	posted := false
	for _, c := range st.IAM.Calls() {
		posted = posted || c.Function == "LivePostFunction" && c.Action == "execute-api:ManageConnections" && c.Decision == "allow"
	}
	if !posted {
		t.Error("no allowed execute-api:ManageConnections call of LivePostFunction recorded")
	}
}

// TestLiveConnectRefused: $connect with no token or any token the HTTP
// API's JWT authorizer refuses (forged signatures, algorithms and keys, an
// unknown kid, expired, another issuer or audience, no expiry, not yet
// valid) is refused as API Gateway refuses it (401), no function but the
// authorizer runs, and nothing is recorded.
func TestLiveConnectRefused(t *testing.T) {
	user := stacktest.UniqueID("live-refused")
	tokens := forgedTokens(t, user)
	tokens["none"] = ""
	tokens["garbage"] = "not-a-jwt"
	for name, token := range tokens {
		t.Run(name, func(t *testing.T) {
			w := liveWrites(t)
			c, status := dialLive(t, token)
			if c != nil || status != http.StatusUnauthorized {
				t.Fatalf("connect with %s token: status %d, want 401", name, status)
			}
			if liveWrites(t) != w {
				t.Fatal("the live function wrote the table")
			}
		})
	}
	if raw := liveItem(t, user); raw != nil {
		t.Errorf("a refused connect recorded connections: %v", raw)
	}
}

// liveWrites counts the live function's calls so far.
func liveWrites(t testing.TB) int {
	n := 0
	for _, c := range stacktest.Stack(t).Calls.FunctionSnapshot("LiveFunction") {
		n += c
	}
	return n
}

// liveItem reads the user's connections item (nil when absent).
func liveItem(t testing.TB, user string) map[string]types.AttributeValue {
	t.Helper()
	out, err := stacktest.DB(t).GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(stacktest.Stack(t).Resources.Table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "U#" + user}, "sk": &types.AttributeValueMemberS{Value: "LIVE"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

// TestLiveConnectionsBoundedAndIdle: a user's connections past the bound
// close the oldest; 10 minutes without a client message close a
// connection, as API Gateway does (on the stack's clock).
func TestLiveConnectionsBoundedAndIdle(t *testing.T) {
	st := stacktest.Stack(t)
	user := stacktest.UniqueID("live-bound")
	var conns []*websocket.Conn
	for i := range live.DefaultMaxConnections + 1 {
		c, status := dialLive(t, st.Token(user, time.Hour))
		if c == nil {
			t.Fatalf("connect %d refused: %d", i, status)
		}
		conns = append(conns, c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _, err := conns[0].Read(ctx)
	if websocket.CloseStatus(err) == -1 {
		t.Fatalf("the oldest connection past the bound stayed open (read: %v)", err)
	}
	// The others stay open; a ping keeps the newest one active.
	if err := conns[len(conns)-1].Write(ctx, websocket.MessageText, []byte(`{"action":"ping"}`)); err != nil {
		t.Fatal(err)
	}
	st.Clock.Advance(live.IdleTimeout + time.Second)
	t.Cleanup(func() { st.Clock.Advance(-(live.IdleTimeout + time.Second)) })
	_, _, err = conns[1].Read(ctx)
	if got := websocket.CloseStatus(err); got != websocket.StatusGoingAway {
		t.Fatalf("an idle connection: read %v (status %d), want closed with 1001", err, got)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatal("timed out")
	}
}

// TestLiveGoneConnectionIsForgotten: a connection API Gateway no longer has
// (its $disconnect lost) answers the post 410; the poster forgets it and
// the user's open connection still gets the message.
func TestLiveGoneConnectionIsForgotten(t *testing.T) {
	st := stacktest.Stack(t)
	user := stacktest.UniqueID("live-gone")
	c, status := dialLive(t, st.Token(user, time.Hour))
	if c == nil {
		t.Fatalf("connect refused: %d", status)
	}
	msgs := messages(c)
	now := strconv.FormatInt(st.Clock.Now().UnixMilli(), 10)
	if _, err := stacktest.DB(t).UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName:                aws.String(st.Resources.Table),
		Key:                      map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "U#" + user}, "sk": &types.AttributeValueMemberS{Value: "LIVE"}},
		UpdateExpression:         aws.String("SET conns.#g = :c"),
		ExpressionAttributeNames: map[string]string{"#g": "GoneConnXyz0AA="},
		ExpressionAttributeValues: map[string]types.AttributeValue{":c": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"c": &types.AttributeValueMemberN{Value: now}, "a": &types.AttributeValueMemberN{Value: now}}}},
	}); err != nil {
		t.Fatal(err)
	}
	id := stacktest.Notify(t, map[string]any{
		"type": "security.login_alert", "channels": []string{"email"},
		"recipient": map[string]any{"userId": user, "email": user + "@example.com"},
		"data":      map[string]any{"url": "https://example.com/s/2"},
	})
	// What this test proves is the forgetting, not the latency (the 2 s
	// bound is TestLiveInboxReachesOnlyItsUser's): allow for a loaded machine.
	if m := next(t, msgs, 10*time.Second, "the open connection's message"); m.ID != id {
		t.Fatalf("got %+v, want %s", m, id)
	}
	stacktest.Eventually(t, 5*time.Second, "the gone connection forgotten", func() bool {
		conns, _ := liveItem(t, user)["conns"].(*types.AttributeValueMemberM)
		if conns == nil {
			return false
		}
		_, gone := conns.Value["GoneConnXyz0AA="]
		return !gone && len(conns.Value) == 1
	})
}
