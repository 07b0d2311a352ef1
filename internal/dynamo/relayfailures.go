package dynamo

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/heraldhq/herald/internal/recovery"
)

// Relay failure notes (recovery.RelayFailure) are items
// pk RF#<yyyyMMdd of the record's creation>#<shard>, sk the record's sequence
// number zero-padded to 40 digits (DynamoDB Streams' longest), so the notes
// of one on-failure record's range are a BETWEEN query per day and shard.
// Shards spread a mass failure (every record of a campaign failing) over
// partitions: sequence numbers grow, so one partition would take them all.
// Notes are written only for failing records and live as long as the relay
// DLQ keeps a message (14 days) and a day more.
const (
	relayFailurePrefix    = "RF#"
	relayFailureDay       = "20060102"
	relayFailureSeqDigits = 40
	// RelayFailureShards may only grow (a smaller value hides notes).
	RelayFailureShards = 8
	// RelayFailureKeep is how long a note outlives its record.
	RelayFailureKeep = 15 * 24 * time.Hour
)

type relayFailureItem struct {
	PK             string `dynamodbav:"pk"`
	SK             string `dynamodbav:"sk"`
	Kind           string `dynamodbav:"kind"`
	Seq            string `dynamodbav:"sequenceNumber"`
	At             string `dynamodbav:"at"`
	ItemPK         string `dynamodbav:"itemPk"`
	ItemSK         string `dynamodbav:"itemSk"`
	NotificationID string `dynamodbav:"notificationId,omitempty"`
	TTL            int64  `dynamodbav:"ttl"`
}

// paddedSequence is a sequence number as a fixed-width sort key.
func paddedSequence(seq string) (string, error) {
	if seq == "" || len(seq) > relayFailureSeqDigits || strings.IndexFunc(seq, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
		return "", fmt.Errorf("sequence number %q: not 1-%d digits", seq, relayFailureSeqDigits)
	}
	return strings.Repeat("0", relayFailureSeqDigits-len(seq)) + seq, nil
}

func relayFailurePK(day time.Time, shard int) string {
	return relayFailurePrefix + day.UTC().Format(relayFailureDay) + "#" + strconv.Itoa(shard)
}

func relayFailureShard(seq string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(seq))
	return int(h.Sum32() % RelayFailureShards)
}

// NoteRelayFailure records a failing stream record's note (one PutItem;
// writing it again for a retry of the same record overwrites it).
func (s *Scheduling) NoteRelayFailure(ctx context.Context, f recovery.RelayFailure) error {
	seq, err := paddedSequence(f.SequenceNumber)
	if err != nil {
		return err
	}
	at := f.At
	if at.IsZero() {
		at = s.now()
	}
	av, err := attributevalue.MarshalMap(relayFailureItem{
		PK: relayFailurePK(at, relayFailureShard(seq)), SK: seq, Kind: "relayFailure", Seq: f.SequenceNumber,
		At: formatTime(at), ItemPK: f.PK, ItemSK: f.SK, NotificationID: f.NotificationID, TTL: at.Add(RelayFailureKeep).Unix(),
	})
	if err != nil {
		return fmt.Errorf("marshal relay failure note: %w", err)
	}
	if _, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: av}); err != nil {
		return fmt.Errorf("note relay failure %s: %w", f.SequenceNumber, err)
	}
	return nil
}

// RelayFailures returns the notes of the records from sequence number first
// to last (inclusive) created between from and to (each widened by a day:
// the on-failure record's arrival times are approximate), in sequence
// order: one Query per day and shard.
func (s *Scheduling) RelayFailures(ctx context.Context, from, to time.Time, first, last string) ([]recovery.RelayFailure, error) {
	lo, err := paddedSequence(first)
	if err != nil {
		return nil, err
	}
	hi, err := paddedSequence(last)
	if err != nil {
		return nil, err
	}
	if hi < lo {
		lo, hi = hi, lo
	}
	if to.Before(from) {
		from, to = to, from
	}
	if to.Sub(from) > RelayFailureKeep {
		return nil, errors.New("relay failure notes: a range of more than 15 days")
	}
	var out []recovery.RelayFailure
	for day := from.UTC().Add(-24 * time.Hour).Truncate(24 * time.Hour); !day.After(to.UTC().Add(24 * time.Hour)); day = day.Add(24 * time.Hour) {
		for shard := range RelayFailureShards {
			p := dynamodb.NewQueryPaginator(s.db, &dynamodb.QueryInput{
				TableName:                 aws.String(s.table),
				KeyConditionExpression:    aws.String("pk = :pk AND sk BETWEEN :lo AND :hi"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(relayFailurePK(day, shard)), ":lo": str(lo), ":hi": str(hi)},
			})
			for p.HasMorePages() {
				page, err := p.NextPage(ctx)
				if err != nil {
					return nil, fmt.Errorf("read relay failure notes: %w", err)
				}
				for _, av := range page.Items {
					var it relayFailureItem
					if err := attributevalue.UnmarshalMap(av, &it); err != nil {
						return nil, fmt.Errorf("unmarshal relay failure note: %w", err)
					}
					out = append(out, recovery.RelayFailure{SequenceNumber: it.Seq, At: parseTime(it.At), PK: it.ItemPK, SK: it.ItemSK, NotificationID: it.NotificationID})
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b recovery.RelayFailure) int {
		pa, _ := paddedSequence(a.SequenceNumber)
		pb, _ := paddedSequence(b.SequenceNumber)
		return strings.Compare(pa, pb)
	})
	return out, nil
}
