package devstack

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Resources are the local counterparts of the template's resources.
type Resources struct {
	// values resolves "ref:X" and "getatt:X.Attr" placeholders.
	values map[string]string
	// Queues maps queue logical ids to their local URLs.
	Queues map[string]QueueInfo
	Table  string
}

// QueueInfo is one local queue.
type QueueInfo struct {
	LogicalID, Name, URL, ARN string
	// DLQ is the logical id of its dead-letter queue ("" for DLQs).
	DLQ             string
	MaxReceiveCount int
}

// Resolve replaces placeholders in s; unknown references are an error.
func (r *Resources) Resolve(s string) (string, error) {
	var missing []string
	out := placeholder.ReplaceAllStringFunc(s, func(m string) string {
		parts := placeholder.FindStringSubmatch(m)
		k := parts[1] + ":" + parts[2]
		if parts[3] != "" {
			k += "." + parts[3]
		}
		v, ok := r.values[k]
		if !ok {
			missing = append(missing, k)
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("unresolved template references: %s", strings.Join(missing, ", "))
	}
	return out, nil
}

// CreateResources creates the template's table and queues in the emulators,
// named prefix+LogicalID, and returns how to resolve references to them.
// Other resources (functions, the HTTP API, SES configuration set) resolve to
// their logical ids: the runner plays their part. A nil client skips its
// resources (a test of one adapter runs one emulator).
func CreateResources(ctx context.Context, t *Template, db *dynamodb.Client, q *sqs.Client, prefix string) (*Resources, error) {
	r := &Resources{values: map[string]string{}, Queues: map[string]QueueInfo{}}
	for id := range t.Resources {
		r.values["ref:"+id] = prefix + id
	}
	if db != nil {
		if err := createTables(ctx, t, db, prefix, r); err != nil {
			return nil, err
		}
	}
	if q != nil {
		if err := createQueues(ctx, t, q, prefix, r); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func createTables(ctx context.Context, t *Template, db *dynamodb.Client, prefix string, r *Resources) error {
	for id, tbl := range t.GetAllDynamoDBTableResources() {
		name := prefix + id
		raw, err := json.Marshal(tbl)
		if err != nil {
			return err
		}
		// The template's property names match the API's input shape.
		var props struct {
			Properties struct {
				AttributeDefinitions   []ddbtypes.AttributeDefinition
				KeySchema              []ddbtypes.KeySchemaElement
				GlobalSecondaryIndexes []struct {
					IndexName  string
					KeySchema  []ddbtypes.KeySchemaElement
					Projection struct {
						ProjectionType   string
						NonKeyAttributes []string
					}
				}
				StreamSpecification     *struct{ StreamViewType string }
				TimeToLiveSpecification *struct {
					AttributeName string
					Enabled       bool
				}
			}
		}
		if err := json.Unmarshal(raw, &props); err != nil {
			return fmt.Errorf("table %s: %w", id, err)
		}
		p := props.Properties
		in := &dynamodb.CreateTableInput{
			TableName: aws.String(name), BillingMode: ddbtypes.BillingModePayPerRequest,
			AttributeDefinitions: p.AttributeDefinitions, KeySchema: p.KeySchema,
		}
		for _, g := range p.GlobalSecondaryIndexes {
			in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, ddbtypes.GlobalSecondaryIndex{
				IndexName: aws.String(g.IndexName), KeySchema: g.KeySchema,
				Projection: &ddbtypes.Projection{ProjectionType: ddbtypes.ProjectionType(g.Projection.ProjectionType), NonKeyAttributes: g.Projection.NonKeyAttributes},
			})
		}
		if p.StreamSpecification != nil {
			in.StreamSpecification = &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: ddbtypes.StreamViewType(p.StreamSpecification.StreamViewType)}
		}
		out, err := db.CreateTable(ctx, in)
		if err != nil {
			return fmt.Errorf("create table %s: %w", name, err)
		}
		if p.TimeToLiveSpecification != nil && p.TimeToLiveSpecification.Enabled {
			if _, err := db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
				TableName:               aws.String(name),
				TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{AttributeName: aws.String(p.TimeToLiveSpecification.AttributeName), Enabled: aws.Bool(true)},
			}); err != nil {
				return fmt.Errorf("enable TTL on %s: %w", name, err)
			}
		}
		r.Table = name
		r.values["getatt:"+id+".Arn"] = aws.ToString(out.TableDescription.TableArn)
		r.values["getatt:"+id+".StreamArn"] = aws.ToString(out.TableDescription.LatestStreamArn)
	}
	return nil
}

func createQueues(ctx context.Context, t *Template, q *sqs.Client, prefix string, r *Resources) error {
	queues := t.GetAllSQSQueueResources()
	ids := slices.Sorted(maps.Keys(queues))
	// First every queue, then redrive policies, which refer to DLQ ARNs.
	for _, id := range ids {
		qq := queues[id]
		attrs := map[string]string{}
		if qq.VisibilityTimeout != nil {
			attrs["VisibilityTimeout"] = fmt.Sprint(*qq.VisibilityTimeout)
		}
		if qq.MessageRetentionPeriod != nil {
			attrs["MessageRetentionPeriod"] = fmt.Sprint(*qq.MessageRetentionPeriod)
		}
		name := prefix + id
		out, err := q.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
		if err != nil {
			return fmt.Errorf("create queue %s: %w", name, err)
		}
		url := aws.ToString(out.QueueUrl)
		ga, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
		if err != nil {
			return fmt.Errorf("queue %s ARN: %w", name, err)
		}
		arn := ga.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
		r.values["ref:"+id] = url
		r.values["getatt:"+id+".Arn"] = arn
		r.values["getatt:"+id+".QueueName"] = name
		r.values["getatt:"+id+".QueueUrl"] = url
		r.Queues[id] = QueueInfo{LogicalID: id, Name: name, URL: url, ARN: arn}
	}
	for _, id := range ids {
		rp, ok := queues[id].RedrivePolicy.(map[string]any)
		if !ok {
			continue
		}
		target, err := r.Resolve(fmt.Sprint(rp["deadLetterTargetArn"]))
		if err != nil {
			return fmt.Errorf("queue %s redrive: %w", id, err)
		}
		var maxReceive int
		fmt.Sscan(fmt.Sprint(rp["maxReceiveCount"]), &maxReceive)
		policy, _ := json.Marshal(map[string]any{"deadLetterTargetArn": target, "maxReceiveCount": maxReceive})
		info := r.Queues[id]
		if _, err := q.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{
			QueueUrl: aws.String(info.URL), Attributes: map[string]string{"RedrivePolicy": string(policy)},
		}); err != nil {
			return fmt.Errorf("queue %s redrive: %w", id, err)
		}
		for dlqID, d := range r.Queues {
			if d.ARN == target {
				info.DLQ = dlqID
			}
		}
		info.MaxReceiveCount = maxReceive
		r.Queues[id] = info
	}
	return nil
}
