package dynamo_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/domain"
)

func TestDevicesFollowTheirToken(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	a, b := uniq(t), uniq(t)+"b"
	dev := domain.Device{ID: "d" + uniq(t), Platform: domain.PlatformAPNs, Token: "ab12", App: "ios", EndpointARN: "arn:aws:sns:us-east-1:000000000000:endpoint/APNS/x/1", CreatedAt: t0}

	if _, err := s.DeviceOwner(ctx, dev.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("owner of a new token: %v, want ErrNotFound", err)
	}
	if err := s.SaveDevice(ctx, a, "", dev); err != nil {
		t.Fatal(err)
	}
	// A second first-registration loses: the owner exists now.
	if err := s.SaveDevice(ctx, b, "", dev); !errors.Is(err, domain.ErrConflict) {
		t.Fatalf("save with a stale owner: %v, want ErrConflict", err)
	}
	p, err := s.GetRecipientProfile(ctx, a)
	if err != nil || len(p.Devices) != 1 || p.Devices[0] != dev {
		t.Fatalf("profile of a: %+v, %v", p, err)
	}
	// Re-registration by the same user is one device.
	if err := s.SaveDevice(ctx, a, a, dev); err != nil {
		t.Fatal(err)
	}
	if ds, _ := s.ListDevices(ctx, a); len(ds) != 1 {
		t.Fatalf("devices of a after re-registering: %v", ds)
	}
	// The token moves to b: a loses it in the same transaction.
	if err := s.SaveDevice(ctx, b, a, dev); err != nil {
		t.Fatal(err)
	}
	if owner, _ := s.DeviceOwner(ctx, dev.ID); owner != b {
		t.Errorf("owner %q, want %q", owner, b)
	}
	if ds, _ := s.ListDevices(ctx, a); len(ds) != 0 {
		t.Errorf("a still has %v", ds)
	}
	if _, err := s.GetDevice(ctx, b, dev.ID); err != nil {
		t.Errorf("b's device: %v", err)
	}
	// a deleting the id finds nothing; b deleting it removes device and owner.
	if err := s.DeleteDevice(ctx, a, dev.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("a deletes b's device: %v, want ErrNotFound", err)
	}
	if err := s.DeleteDevice(ctx, b, dev.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeviceOwner(ctx, dev.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("owner after delete: %v", err)
	}
}

func TestListDevicesOldestFirst(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	u := uniq(t)
	for i, id := range []string{"dz", "da", "dm"} {
		d := domain.Device{ID: id + uniq(t), Platform: domain.PlatformFCM, Token: id, EndpointARN: "arn:e/" + id, CreatedAt: t0.Add(time.Duration(i) * time.Minute)}
		if err := s.SaveDevice(ctx, u, "", d); err != nil {
			t.Fatal(err)
		}
	}
	ds, err := s.ListDevices(ctx, u)
	if err != nil || len(ds) != 3 {
		t.Fatalf("%v, %v", ds, err)
	}
	var tokens []string
	for _, d := range ds {
		tokens = append(tokens, d.Token)
	}
	if !slices.Equal(tokens, []string{"dz", "da", "dm"}) {
		t.Errorf("order %v, want by createdAt", tokens)
	}
}

// A transition adds the targets a send reached to the delivery's set; a
// repeat of a target is kept once.
func TestTransitionAddsSentTargets(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	id := "n" + uniq(t)
	seedDelivery(t, s, id, domain.ChannelPush, domain.StatusSending)
	d, err := s.Transition(ctx, id, domain.ChannelPush, domain.Change{To: domain.StatusRetrying, From: []domain.Status{domain.StatusSending}, AddSentTargets: []string{"s1", "d1"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(slices.Values(d.SentTargets)); !slices.Equal(got, []string{"d1", "s1"}) {
		t.Fatalf("after retrying: %v", got)
	}
	if _, err := s.Transition(ctx, id, domain.ChannelPush, domain.Change{To: domain.StatusSending, From: []domain.Status{domain.StatusRetrying}, LeaseUntil: t0.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	d, err = s.Transition(ctx, id, domain.ChannelPush, domain.Change{To: domain.StatusSent, From: []domain.Status{domain.StatusSending}, AddSentTargets: []string{"d2", "s1"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(slices.Values(d.SentTargets)); !slices.Equal(got, []string{"d1", "d2", "s1"}) {
		t.Errorf("after sent: %v", got)
	}
}
