package devstack

import (
	"context"
	"encoding/json"
	"errors"
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
	// An event bus is named by its Name property (Ref gives the name).
	for id, b := range t.GetAllEventsEventBusResources() {
		r.values["ref:"+id] = b.Name
		r.values["getatt:"+id+".Name"] = b.Name
		r.values["getatt:"+id+".Arn"] = "arn:aws:events:" + LocalRegion + ":" + LocalAccountID + ":event-bus/" + b.Name
	}
	// A rule's ARN (what a queue policy's aws:SourceArn names).
	for id, rule := range t.GetAllEventsRuleResources() {
		name := prefix + id
		if rule.Name != nil {
			name = *rule.Name
		}
		bus := ""
		if rule.EventBusName != nil {
			if b, err := r.Resolve(*rule.EventBusName); err == nil {
				bus = b
			}
		}
		r.values["getatt:"+id+".Arn"] = ruleARN(bus, name)
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
		desc, err := existingTable(ctx, db, in)
		if err != nil {
			return err
		}
		if desc == nil {
			out, err := db.CreateTable(ctx, in)
			var inUse *ddbtypes.ResourceInUseException
			switch {
			case errors.As(err, &inUse):
				// The SDK retried a CreateTable whose first answer was lost
				// or late (a loaded machine): the table is there, made from
				// this input; take it as existing tables are taken.
				if desc, err = existingTable(ctx, db, in); err == nil && desc == nil {
					err = fmt.Errorf("create table %s: %w, yet it does not exist", name, inUse)
				}
				if err != nil {
					return err
				}
			case err != nil:
				return fmt.Errorf("create table %s: %w", name, err)
			default:
				desc = out.TableDescription
			}
		}
		if p.TimeToLiveSpecification != nil && p.TimeToLiveSpecification.Enabled {
			if err := enableTTL(ctx, db, name, p.TimeToLiveSpecification.AttributeName); err != nil {
				return err
			}
		}
		r.Table = name
		r.values["getatt:"+id+".Arn"] = aws.ToString(desc.TableArn)
		r.values["getatt:"+id+".StreamArn"] = aws.ToString(desc.LatestStreamArn)
	}
	return nil
}

// enableTTL turns on TTL on attr unless an existing table already has it.
func enableTTL(ctx context.Context, db *dynamodb.Client, table, attr string) error {
	ttl, err := db.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	if err != nil {
		return fmt.Errorf("describe TTL of %s: %w", table, err)
	}
	if d := ttl.TimeToLiveDescription; d != nil && d.TimeToLiveStatus == ddbtypes.TimeToLiveStatusEnabled && aws.ToString(d.AttributeName) == attr {
		return nil
	}
	if _, err := db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(table),
		TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{AttributeName: aws.String(attr), Enabled: aws.Bool(true)},
	}); err != nil {
		return fmt.Errorf("enable TTL on %s: %w", table, err)
	}
	return nil
}

// existingTable describes the table `in` would create when it already exists
// (a data directory from an earlier run), or returns nil. A table whose keys,
// indexes or stream differ from the template's is an error that says how to
// start afresh, rather than a stack that half matches the template.
func existingTable(ctx context.Context, db *dynamodb.Client, in *dynamodb.CreateTableInput) (*ddbtypes.TableDescription, error) {
	name := aws.ToString(in.TableName)
	out, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: in.TableName})
	var notFound *ddbtypes.ResourceNotFoundException
	if errors.As(err, &notFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("describe table %s: %w", name, err)
	}
	d := out.Table
	if diff := tableDiff(in, d); diff != "" {
		return nil, fmt.Errorf("table %s in the data directory does not match template.yaml (%s): delete the data directory's dynamodb/ folder to start afresh", name, diff)
	}
	return d, nil
}

// tableDiff names the first difference between the keys, indexes and stream
// the template asks for and an existing table's, or returns "".
func tableDiff(want *dynamodb.CreateTableInput, have *ddbtypes.TableDescription) string {
	keys := func(ks []ddbtypes.KeySchemaElement) string {
		var b strings.Builder
		for _, k := range ks {
			fmt.Fprintf(&b, "%s:%s ", aws.ToString(k.AttributeName), k.KeyType)
		}
		return b.String()
	}
	if keys(want.KeySchema) != keys(have.KeySchema) {
		return "primary key"
	}
	haveIdx := map[string]string{}
	for _, g := range have.GlobalSecondaryIndexes {
		haveIdx[aws.ToString(g.IndexName)] = keys(g.KeySchema)
	}
	if len(haveIdx) != len(want.GlobalSecondaryIndexes) {
		return "global secondary indexes"
	}
	for _, g := range want.GlobalSecondaryIndexes {
		if k, ok := haveIdx[aws.ToString(g.IndexName)]; !ok || k != keys(g.KeySchema) {
			return "index " + aws.ToString(g.IndexName)
		}
	}
	wantStream := want.StreamSpecification != nil
	haveStream := have.StreamSpecification != nil && aws.ToBool(have.StreamSpecification.StreamEnabled)
	if wantStream != haveStream || (wantStream && want.StreamSpecification.StreamViewType != have.StreamSpecification.StreamViewType) {
		return "stream"
	}
	return ""
}

// existingQueue returns the URL of queue name when it already exists (kept
// in a data directory), after setting the template's attributes on it, or "".
func existingQueue(ctx context.Context, q *sqs.Client, name string, attrs map[string]string) (string, error) {
	out, err := q.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	var notFound *sqstypes.QueueDoesNotExist
	if errors.As(err, &notFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("queue %s: %w", name, err)
	}
	url := aws.ToString(out.QueueUrl)
	if len(attrs) > 0 {
		if _, err := q.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: attrs}); err != nil {
			return "", fmt.Errorf("queue %s attributes: %w", name, err)
		}
	}
	return url, nil
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
		url, err := existingQueue(ctx, q, name, attrs)
		if err != nil {
			return err
		}
		if url == "" {
			out, err := q.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
			if err != nil {
				return fmt.Errorf("create queue %s: %w", name, err)
			}
			url = aws.ToString(out.QueueUrl)
		}
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
