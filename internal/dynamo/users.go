package dynamo

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/domain"
)

const (
	userPrefix    = "U#"
	profileSK     = "PROFILE"
	prefsSK       = "PREFS"
	pushSubPrefix = "PUSH#"
)

// UserPK is the partition key of everything about one user.
func UserPK(userID string) string { return userPrefix + userID }

type userItem struct {
	PK              string             `dynamodbav:"pk"`
	SK              string             `dynamodbav:"sk"`
	Kind            string             `dynamodbav:"kind"`
	UserID          string             `dynamodbav:"userId"`
	Email           string             `dynamodbav:"email,omitempty"`
	Phone           string             `dynamodbav:"phone,omitempty"`
	Locale          string             `dynamodbav:"locale,omitempty"`
	Timezone        string             `dynamodbav:"timezone,omitempty"`
	QuietHours      *domain.QuietHours `dynamodbav:"quietHours,omitempty"`
	DigestMinutes   int                `dynamodbav:"digestMinutes,omitempty"`
	SuppressedEmail string             `dynamodbav:"suppressedEmail,omitempty"`
	UpdatedAt       string             `dynamodbav:"updatedAt"`
	// GSI4PK puts the profile in the profiles index (IndexProfiles).
	GSI4PK string `dynamodbav:"gsi4pk,omitempty"`
}

type prefsItem struct {
	PK    string                     `dynamodbav:"pk"`
	SK    string                     `dynamodbav:"sk"`
	Kind  string                     `dynamodbav:"kind"`
	Prefs map[string]map[string]bool `dynamodbav:"prefs"`
}

type pushSubItem struct {
	PK        string `dynamodbav:"pk"`
	SK        string `dynamodbav:"sk"`
	Kind      string `dynamodbav:"kind"`
	ID        string `dynamodbav:"id"`
	Endpoint  string `dynamodbav:"endpoint"`
	P256dh    string `dynamodbav:"p256dh"`
	Auth      string `dynamodbav:"auth"`
	CreatedAt string `dynamodbav:"createdAt"`
}

func (it *pushSubItem) toDomain() domain.PushSubscription {
	return domain.PushSubscription{ID: it.ID, Endpoint: it.Endpoint, P256dh: it.P256dh, Auth: it.Auth, CreatedAt: parseTime(it.CreatedAt)}
}

// GetRecipientProfile reads a user's profile, preferences, push
// subscriptions and devices in one strongly consistent query.
func (s *Users) GetRecipientProfile(ctx context.Context, userID string) (*domain.RecipientProfile, error) {
	p := &domain.RecipientProfile{Preferences: domain.Preferences{}}
	var start map[string]types.AttributeValue
	for {
		out, err := s.db.Query(ctx, &dynamodb.QueryInput{
			TableName: aws.String(s.table),
			// Everything of the user but the topics they follow (sorted
			// after every other item of the partition, and unbounded).
			KeyConditionExpression:    aws.String("pk = :pk AND sk < :topics"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(UserPK(userID)), ":topics": str(userTopicPrefix)},
			ConsistentRead:            aws.Bool(true),
			ExclusiveStartKey:         start,
		})
		if err != nil {
			return nil, fmt.Errorf("query user %s: %w", userID, err)
		}
		for _, av := range out.Items {
			if err := absorbUserItem(p, av); err != nil {
				return nil, fmt.Errorf("user %s: %w", userID, err)
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return p, nil
		}
		start = out.LastEvaluatedKey
	}
}

func absorbUserItem(p *domain.RecipientProfile, av map[string]types.AttributeValue) error {
	sk, _ := av["sk"].(*types.AttributeValueMemberS)
	if sk == nil {
		return nil
	}
	switch {
	case sk.Value == profileSK:
		var it userItem
		if err := attributevalue.UnmarshalMap(av, &it); err != nil {
			return fmt.Errorf("unmarshal profile: %w", err)
		}
		p.User = it.toDomain()
	case sk.Value == presenceSK:
		p.LastSeenAt, p.PresentUntil = lastSeenOf(av), presentUntilOf(av)
	case sk.Value == prefsSK:
		prefs, err := decodePrefs(av, strings.TrimPrefix(stringAttr(av, "pk"), userPrefix))
		if err != nil {
			return err
		}
		p.Preferences, p.Budget = prefs, decodeBudget(av)
	case strings.HasPrefix(sk.Value, pushSubPrefix):
		var it pushSubItem
		if err := attributevalue.UnmarshalMap(av, &it); err != nil {
			return fmt.Errorf("unmarshal push subscription: %w", err)
		}
		p.PushSubscriptions = append(p.PushSubscriptions, it.toDomain())
	case strings.HasPrefix(sk.Value, devicePrefix):
		d, err := decodeDevice(av)
		if err != nil {
			return err
		}
		p.Devices = append(p.Devices, d)
	}
	return nil
}

func (it *userItem) toDomain() *domain.User {
	return &domain.User{
		ID: it.UserID, Email: it.Email, Phone: it.Phone, Locale: it.Locale, Timezone: it.Timezone,
		QuietHours: it.QuietHours, DigestMinutes: it.DigestMinutes, SuppressedEmail: it.SuppressedEmail,
		UpdatedAt: parseTime(it.UpdatedAt),
	}
}

// GetUser reads a user's profile (strongly consistent); domain.ErrNotFound if
// the user has none.
func (s *Users) GetUser(ctx context.Context, userID string) (*domain.User, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: key(UserPK(userID), profileSK), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("get user %s: %w", userID, err)
	}
	if len(out.Item) == 0 {
		return nil, fmt.Errorf("user %s: %w", userID, domain.ErrNotFound)
	}
	var it userItem
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return nil, fmt.Errorf("unmarshal user %s: %w", userID, err)
	}
	return it.toDomain(), nil
}

// PutUser replaces a user's profile. A changed email address lifts the
// suppression of the old one: with u.SuppressedEmail empty (the API never
// sets it), a stored suppression survives only when it is for the address
// being written. A non-empty u.SuppressedEmail is stored as given. On return
// u holds what was stored (SuppressedEmail, UpdatedAt).
//
// The suppression is decided by conditional puts, not a read: the common
// case (no suppression, or one for another address) is one write; a
// suppression of the same address costs a second conditional write.
func (s *Users) PutUser(ctx context.Context, u *domain.User) error {
	now := s.now()
	it := userItem{
		PK: UserPK(u.ID), SK: profileSK, Kind: "user", UserID: u.ID, Email: u.Email, Phone: u.Phone,
		Locale: u.Locale, Timezone: u.Timezone, QuietHours: u.QuietHours, DigestMinutes: u.DigestMinutes,
		SuppressedEmail: u.SuppressedEmail, UpdatedAt: formatTime(now), GSI4PK: u.ID,
	}
	explicit := u.SuppressedEmail != ""
	for attempt := 0; attempt < 4; attempt++ {
		in := &dynamodb.PutItemInput{TableName: aws.String(s.table)}
		switch {
		case explicit:
		case attempt%2 == 0: // drop any suppression that is not for this address
			it.SuppressedEmail = ""
			in.ConditionExpression = aws.String("attribute_not_exists(suppressedEmail) OR suppressedEmail <> :email")
		default: // the stored suppression is for this very address: keep it
			it.SuppressedEmail = u.Email
			in.ConditionExpression = aws.String("suppressedEmail = :email")
		}
		if in.ConditionExpression != nil {
			in.ExpressionAttributeValues = map[string]types.AttributeValue{":email": str(u.Email)}
		}
		item, err := attributevalue.MarshalMap(it)
		if err != nil {
			return fmt.Errorf("marshal user %s: %w", u.ID, err)
		}
		in.Item = item
		_, err = s.db.PutItem(ctx, in)
		if isConditionFailed(err) {
			continue // the suppression changed under us: try the other case
		}
		if err != nil {
			return fmt.Errorf("put user %s: %w", u.ID, err)
		}
		u.SuppressedEmail, u.UpdatedAt = it.SuppressedEmail, now
		return nil
	}
	return fmt.Errorf("put user %s: suppression keeps changing: %w", u.ID, domain.ErrConflict)
}

// AddPushSubscription stores a subscription under the user.
func (s *Users) AddPushSubscription(ctx context.Context, userID string, sub domain.PushSubscription) error {
	_, err := s.SavePushSubscription(ctx, userID, sub)
	return err
}

// SavePushSubscription stores a subscription under the user, replacing one
// with the same id, and reports whether it is new.
func (s *Users) SavePushSubscription(ctx context.Context, userID string, sub domain.PushSubscription) (created bool, err error) {
	item, err := attributevalue.MarshalMap(pushSubItem{
		PK: UserPK(userID), SK: pushSubPrefix + sub.ID, Kind: "pushSubscription", ID: sub.ID,
		Endpoint: sub.Endpoint, P256dh: sub.P256dh, Auth: sub.Auth, CreatedAt: formatTime(sub.CreatedAt),
	})
	if err != nil {
		return false, fmt.Errorf("marshal push subscription: %w", err)
	}
	out, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: item, ReturnValues: types.ReturnValueAllOld})
	if err != nil {
		return false, fmt.Errorf("put push subscription for %s: %w", userID, err)
	}
	return len(out.Attributes) == 0, nil
}

// ListPushSubscriptions reads a user's push subscriptions, oldest first.
func (s *Users) ListPushSubscriptions(ctx context.Context, userID string) ([]domain.PushSubscription, error) {
	var out []domain.PushSubscription
	err := s.queryUserItems(ctx, userID, pushSubPrefix, func(av map[string]types.AttributeValue) error {
		var it pushSubItem
		if err := attributevalue.UnmarshalMap(av, &it); err != nil {
			return fmt.Errorf("unmarshal push subscription: %w", err)
		}
		out = append(out, it.toDomain())
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("push subscriptions of %s: %w", userID, err)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// queryUserItems calls each for every item of the user's partition whose
// sort key starts with prefix (strongly consistent, every page).
func (s *Users) queryUserItems(ctx context.Context, userID, prefix string, each func(map[string]types.AttributeValue) error) error {
	var start map[string]types.AttributeValue
	for {
		page, err := s.db.Query(ctx, &dynamodb.QueryInput{
			TableName:              aws.String(s.table),
			KeyConditionExpression: aws.String("pk = :pk AND begins_with(sk, :prefix)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":pk": str(UserPK(userID)), ":prefix": str(prefix),
			},
			ConsistentRead:    aws.Bool(true),
			ExclusiveStartKey: start,
		})
		if err != nil {
			return fmt.Errorf("query %s of %s: %w", prefix, userID, err)
		}
		for _, av := range page.Items {
			if err := each(av); err != nil {
				return err
			}
		}
		if len(page.LastEvaluatedKey) == 0 {
			return nil
		}
		start = page.LastEvaluatedKey
	}
}

// DeletePushSubscription removes a subscription; domain.ErrNotFound if absent.
func (s *Users) DeletePushSubscription(ctx context.Context, userID, subID string) error {
	_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(s.table), Key: key(UserPK(userID), pushSubPrefix+subID),
		ConditionExpression: aws.String("attribute_exists(pk)"),
	})
	if isConditionFailed(err) {
		return fmt.Errorf("push subscription %s: %w", subID, domain.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("delete push subscription %s: %w", subID, err)
	}
	return nil
}
