package devstack

import (
	"context"
	"embed"
	"io/fs"
	"net/http"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/dynamo"
)

// consoleFiles are the dev console's page, script and styles.
//
//go:embed console
var consoleFiles embed.FS

// routeConsole serves the dev console at /_dev/, its user view at
// /_dev/user?id=u1 (which reads the API's own history route), the browser
// kit (web/) at /_dev/kit/ for its demo inbox and service worker, and the
// two views the console needs that no other route gives: recent
// notifications with their deliveries, and the fault switches' state.
func (s *Stack) routeConsole() {
	assets, _ := fs.Sub(consoleFiles, "console")
	page := func(name string) http.Handler {
		return noStore(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.ServeFileFS(w, r, assets, name) }))
	}
	s.mux.Handle("GET /_dev/{$}", page("index.html"))
	s.mux.Handle("GET /_dev/user", page("user.html"))
	s.mux.Handle("GET /_dev/console/", noStore(http.StripPrefix("/_dev/console/", http.FileServerFS(assets))))
	// The kit is served from the working tree: edits show on reload.
	s.mux.Handle("GET /_dev/kit/", noStore(http.StripPrefix("/_dev/kit/", http.FileServer(http.Dir(filepath.Join(s.cfg.Root, "web"))))))
	s.mux.HandleFunc("GET /_dev/notifications", s.recentNotifications)
}

func noStore(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	})
}

// FaultState is one channel's fault switch; Remaining < 0 is "until off".
type FaultState struct {
	Mode      FaultMode `json:"mode"`
	Remaining int       `json:"remaining"`
	Served    int       `json:"served"`
}

func (f *Faults) state() map[domain.Channel]FaultState {
	out := map[domain.Channel]FaultState{}
	f.mu.Lock()
	for _, ch := range FaultChannels {
		if ch == domain.ChannelPush {
			continue // the push sink's own faults, below
		}
		st := FaultState{Mode: FaultOff, Served: len(f.hits[ch])}
		if p, ok := f.pending[ch]; ok {
			st.Mode, st.Remaining = p.mode, p.remaining
		}
		out[ch] = st
	}
	f.mu.Unlock()
	st := FaultState{Mode: FaultOff}
	if status, remaining := f.push.PendingFaults(); remaining > 0 {
		st.Mode, st.Remaining = FaultTransient, remaining
		switch status {
		case http.StatusBadRequest:
			st.Mode = FaultPermanent
		case 0: // a slow push
			st.Mode = FaultSlow
		}
		if remaining >= 1<<30 {
			st.Remaining = -1
		}
	}
	out[domain.ChannelPush] = st
	f.mu.Lock()
	for _, provider := range FaultProviders {
		key := providerFault(provider)
		st := FaultState{Mode: FaultOff, Served: len(f.hits[key])}
		if p, ok := f.pending[key]; ok {
			st.Mode, st.Remaining = p.mode, p.remaining
		}
		out[domain.Channel(provider)] = st
	}
	f.mu.Unlock()
	return out
}

// recentNotification is a notification as the console lists it: ids,
// types and states, no contact data or template data.
type recentNotification struct {
	ID         string                    `json:"id"`
	Type       string                    `json:"type"`
	UserID     string                    `json:"userId"`
	Caller     string                    `json:"caller"`
	Priority   string                    `json:"priority"`
	Status     string                    `json:"status"`
	CreatedAt  time.Time                 `json:"createdAt"`
	Deliveries map[string]recentDelivery `json:"deliveries"`
	// Overall is what happened to the notification as a whole, from its
	// deliveries (overallState); Status is only the API's accepted or
	// cancelled.
	Overall string `json:"overall"`
}

// overallState is domain.OverallOf as the console shows it ("in progress",
// "partly failed").
func overallState(status string, ds map[string]recentDelivery) string {
	states := make([]domain.Status, 0, len(ds))
	for _, d := range ds {
		states = append(states, domain.Status(d.Status))
	}
	return strings.ReplaceAll(string(domain.OverallOf(domain.NotificationStatus(status), states)), "_", " ")
}

type recentDelivery struct {
	Status    string     `json:"status"`
	Reason    string     `json:"reason,omitempty"`
	Attempts  int        `json:"attempts"`
	LastError string     `json:"lastError,omitempty"`
	DueAt     *time.Time `json:"dueAt,omitempty"`
	UpdatedAt time.Time  `json:"updatedAt"`
}

// recentNotifications lists the newest notifications (?limit=, default 20)
// with each channel's delivery. It scans the local table, which only the
// dev stack can afford.
func (s *Stack) recentNotifications(w http.ResponseWriter, r *http.Request) {
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	if limit <= 0 || limit > 100 {
		limit = 20
	}
	out, err := s.RecentNotifications(r.Context(), limit)
	if err != nil {
		writeJSON(w, http.StatusBadGateway, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// RecentNotifications reads the newest limit notifications with their deliveries.
func (s *Stack) RecentNotifications(ctx context.Context, limit int) ([]recentNotification, error) {
	db := dynamodb.NewFromConfig(s.AWS)
	type head struct{ id, createdAt string }
	var heads []head
	in := &dynamodb.ScanInput{
		TableName:                 aws.String(s.Resources.Table),
		FilterExpression:          aws.String("sk = :n"),
		ProjectionExpression:      aws.String("id, createdAt"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":n": &types.AttributeValueMemberS{Value: "N"}},
	}
	for pages := 0; pages < 50; pages++ {
		page, err := db.Scan(ctx, in)
		if err != nil {
			return nil, err
		}
		for _, item := range page.Items {
			id, _ := item["id"].(*types.AttributeValueMemberS)
			at, _ := item["createdAt"].(*types.AttributeValueMemberS)
			if id != nil && at != nil {
				heads = append(heads, head{id.Value, at.Value})
			}
		}
		if page.LastEvaluatedKey == nil {
			break
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
	sort.Slice(heads, func(i, j int) bool { return heads[i].createdAt > heads[j].createdAt })
	if len(heads) > limit {
		heads = heads[:limit]
	}
	store := &dynamo.Notifications{Table: dynamo.New(db, s.Resources.Table)}
	out := make([]recentNotification, 0, len(heads))
	for _, h := range heads {
		n, ds, err := store.GetNotificationWithDeliveries(ctx, h.id)
		if err != nil {
			continue // expired or removed since the scan
		}
		rn := recentNotification{ID: n.ID, Type: n.Type, UserID: n.Recipient.UserID, Caller: n.Caller, Priority: string(n.Priority),
			Status: string(n.Status), CreatedAt: n.CreatedAt, Deliveries: map[string]recentDelivery{}}
		for _, d := range ds {
			rd := recentDelivery{Status: string(d.Status), Reason: string(d.Reason), Attempts: d.Attempts, LastError: d.LastError, UpdatedAt: d.UpdatedAt}
			if !d.DueAt.IsZero() {
				due := d.DueAt
				rd.DueAt = &due
			}
			rn.Deliveries[string(d.Channel)] = rd
		}
		rn.Overall = overallState(rn.Status, rn.Deliveries)
		out = append(out, rn)
	}
	return out, nil
}
