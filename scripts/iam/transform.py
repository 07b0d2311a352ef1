#!/usr/bin/env python3
"""The template as the SAM transform hands it to CloudFormation, and each
function's IAM policy in it with resolved ARNs.

Runs the real SAM transform (aws-sam-translator, what `sam build`/`sam deploy`
use) on template.yaml, then resolves the intrinsic functions in every function
role's policies (Ref, Fn::GetAtt, Fn::Sub, Fn::Join, Fn::If, Fn::Select,
Fn::Split) to the physical names a stack would have: resources named
<prefix><LogicalId> (the names the local stack gives the table and queues),
in the given region and account. Prints JSON:

  {"samTranslator": "1.110.0", "stack": {...},
   "functions": {"RelayFunction": {"role": ..., "roleArn": ...,
       "managedPolicyArns": [...], "policies": [{"name": ..., "document": {...}}]}},
   "serviceNeeds": [{"function": ..., "action": ..., "resource": ..., "why": ...}],
   "template": {...}}

serviceNeeds are the calls Lambda itself makes with a function's role: event
source mappings (SQS queues, DynamoDB streams), their on-failure destinations
and the function's dead-letter queue. The local runner plays that part with its
own clients, so these are checked statically, not per call.

template is the transformed template itself, intrinsic functions unresolved
(CloudFormation resolves them at deploy time): the local runner reads its
resources (devstack.ParseTransformed) and resolves them with the run's
parameters, so one transform feeds both the IAM check and the runner.

Usage: transform.py TEMPLATE [--prefix herald-] [--stack herald]
                     [--region us-east-1] [--account 000000000000] [--param K=V ...]
"""
import argparse
import copy
import json
import os
import re
import sys

PINNED_SAM = "1.110.0"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("template")
    ap.add_argument("--prefix", default="herald-")
    ap.add_argument("--stack", default="herald")
    ap.add_argument("--region", default="us-east-1")
    ap.add_argument("--account", default="000000000000")
    ap.add_argument("--param", action="append", default=[], help="parameter override K=V")
    args = ap.parse_args()

    # The transform names ARNs (managed policies) with the region's partition.
    os.environ["AWS_DEFAULT_REGION"] = args.region
    import samtranslator
    from samtranslator.parser.parser import Parser
    from samtranslator.translator.translator import Translator
    from samtranslator.yaml_helper import yaml_parse

    if samtranslator.__version__ != PINNED_SAM:
        sys.exit(f"aws-sam-translator {samtranslator.__version__} found, {PINNED_SAM} pinned (make deps)")

    with open(args.template) as f:
        sam = yaml_parse(f.read())
    # What `sam package` does before deploy: local code becomes an S3 object.
    for res in sam.get("Resources", {}).values():
        if res.get("Type") == "AWS::Serverless::Function":
            res.setdefault("Properties", {})["CodeUri"] = "s3://herald-artifacts/code.zip"
    params = {}
    for name, p in (sam.get("Parameters") or {}).items():
        if "Default" in p:
            params[name] = str(p["Default"])
    for kv in args.param:
        k, _, v = kv.partition("=")
        params[k] = v
    cfn = Translator(managed_policy_map=None, sam_parser=Parser()).translate(
        copy.deepcopy(sam), parameter_values=dict(params))

    r = Resolver(cfn, params, args)
    out = {"samTranslator": samtranslator.__version__,
           "stack": {"name": args.stack, "prefix": args.prefix, "region": args.region, "account": args.account},
           "functions": {}, "serviceNeeds": [], "template": cfn}
    resources = cfn["Resources"]
    for fid, fn in sorted(resources.items()):
        if fn["Type"] != "AWS::Lambda::Function":
            continue
        role_ref = fn["Properties"].get("Role")
        if not (isinstance(role_ref, dict) and "Fn::GetAtt" in role_ref):
            sys.exit(f"{fid}: role {role_ref!r} is not a role of this template")
        role_id = role_ref["Fn::GetAtt"][0]
        role = resources[role_id]["Properties"]
        out["functions"][fid] = {
            "role": role_id,
            "roleArn": r.value({"Fn::GetAtt": [role_id, "Arn"]}),
            "managedPolicyArns": [r.value(a) for a in role.get("ManagedPolicyArns", [])],
            "policies": [{"name": p["PolicyName"], "document": r.value(p["PolicyDocument"])}
                         for p in role.get("Policies", [])],
        }
        dlq = (fn["Properties"].get("DeadLetterConfig") or {}).get("TargetArn")
        if dlq is not None:
            need(out, fid, "sqs:SendMessage", r.value(dlq), "DeadLetterConfig (asynchronous invocations that failed)")
    for mid, m in sorted(resources.items()):
        if m["Type"] != "AWS::Lambda::EventSourceMapping":
            continue
        props = m["Properties"]
        fid = function_id(props["FunctionName"])
        source = r.value(props["EventSourceArn"])
        why = f"{mid} (event source mapping)"
        if ":sqs:" in source:
            for a in ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"):
                need(out, fid, a, source, why)
        elif ":dynamodb:" in source:
            for a in ("dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:ListStreams"):
                need(out, fid, a, source, why)
        dest = ((props.get("DestinationConfig") or {}).get("OnFailure") or {}).get("Destination")
        if dest is not None:
            target = r.value(dest)
            action = "sqs:SendMessage" if ":sqs:" in target else "sns:Publish"
            need(out, fid, action, target, f"{mid} on-failure destination")
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


def function_id(ref):
    if isinstance(ref, dict) and "Ref" in ref:
        return ref["Ref"]
    sys.exit(f"event source mapping FunctionName {ref!r}: want a Ref to a function")


def need(out, fid, action, resource, why):
    out["serviceNeeds"].append({"function": fid, "action": action, "resource": resource, "why": why})


class Resolver:
    """Resolves intrinsic functions to the physical values of one stack."""

    def __init__(self, cfn, params, args):
        self.res = cfn["Resources"]
        self.params = params
        self.a = args
        self.pseudo = {
            "AWS::Region": args.region, "AWS::AccountId": args.account, "AWS::Partition": "aws",
            "AWS::StackName": args.stack, "AWS::URLSuffix": "amazonaws.com",
            "AWS::StackId": f"arn:aws:cloudformation:{args.region}:{args.account}:stack/{args.stack}/local",
            "AWS::NoValue": None,
        }
        self.conditions = cfn.get("Conditions", {})

    def arn(self, service, rest, region=True, account=True):
        return f"arn:aws:{service}:{self.a.region if region else ''}:{self.a.account if account else ''}:{rest}"

    def name(self, lid):
        return self.a.prefix + lid

    def ref(self, lid):
        if lid in self.pseudo:
            return self.pseudo[lid]
        if lid in self.params:
            return self.params[lid]
        res = self.res.get(lid)
        if res is None:
            raise KeyError(f"Ref {lid}: no such parameter or resource")
        t = res["Type"]
        if t == "AWS::SQS::Queue":
            return f"https://sqs.{self.a.region}.amazonaws.com/{self.a.account}/{self.name(lid)}"
        if t == "AWS::SNS::Topic":
            return self.arn("sns", self.name(lid))
        if t == "AWS::Events::EventBus":
            # Ref is the bus's name (its Name property).
            return self.value(res["Properties"]["Name"])
        if t == "AWS::SecretsManager::Secret":
            # Secrets Manager appends six random characters to the name.
            return self.arn("secretsmanager", f"secret:{self.name(lid)}-Abc123")
        return self.name(lid)

    def getatt(self, lid, attr):
        res = self.res.get(lid)
        if res is None:
            raise KeyError(f"GetAtt {lid}.{attr}: no such resource")
        t, n = res["Type"], self.name(lid)
        table = {
            ("AWS::DynamoDB::Table", "Arn"): lambda: self.arn("dynamodb", f"table/{n}"),
            ("AWS::DynamoDB::Table", "StreamArn"): lambda: self.arn("dynamodb", f"table/{n}/stream/local"),
            ("AWS::SQS::Queue", "Arn"): lambda: self.arn("sqs", n),
            ("AWS::SQS::Queue", "QueueName"): lambda: n,
            ("AWS::SQS::Queue", "QueueUrl"): lambda: self.ref(lid),
            ("AWS::SNS::Topic", "TopicArn"): lambda: self.arn("sns", n),
            ("AWS::IAM::Role", "Arn"): lambda: self.arn("iam", f"role/{n}", region=False),
            ("AWS::Lambda::Function", "Arn"): lambda: self.arn("lambda", f"function:{n}"),
            ("AWS::Events::EventBus", "Arn"): lambda: self.arn("events", f"event-bus/{self.ref(lid)}"),
            ("AWS::Events::EventBus", "Name"): lambda: self.ref(lid),
        }
        f = table.get((t, attr))
        if f is None:
            raise KeyError(f"GetAtt {lid}.{attr} ({t}) is not resolved by scripts/iam/transform.py")
        return f()

    def condition(self, name):
        return bool(self.value(self.conditions[name]))

    def value(self, v):
        if isinstance(v, list):
            return [x for x in (self.value(i) for i in v) if x is not None]
        if not isinstance(v, dict):
            return v
        if len(v) == 1:
            (k, arg), = v.items()
            if k == "Ref":
                return self.ref(arg)
            if k == "Fn::GetAtt":
                lid, attr = arg if isinstance(arg, list) else arg.split(".", 1)
                return self.getatt(lid, attr)
            if k == "Fn::Sub":
                text, extra = (arg, {}) if isinstance(arg, str) else (arg[0], self.value(arg[1]))
                return self.sub(text, extra)
            if k == "Fn::Join":
                sep, items = arg
                return sep.join(str(x) for x in self.value(items))
            if k == "Fn::Select":
                i, items = arg
                return self.value(items)[int(self.value(i))]
            if k == "Fn::Split":
                sep, s = arg
                return self.value(s).split(sep)
            if k == "Fn::If":
                cond, yes, no = arg
                return self.value(yes if self.condition(cond) else no)
            if k == "Fn::Equals":
                a, b = self.value(arg)
                return str(a) == str(b)
            if k == "Fn::Not":
                return not self.value(arg[0])
            if k == "Condition":
                return self.condition(arg)
            if k.startswith("Fn::"):
                raise KeyError(f"{k} is not resolved by scripts/iam/transform.py")
        out = {k: self.value(x) for k, x in v.items()}
        return {k: x for k, x in out.items() if x is not None}  # AWS::NoValue removes the key

    def sub(self, text, extra):
        def one(m):
            key = m.group(1)
            if key.startswith("!"):
                return "${" + key[1:] + "}"
            if key in extra:
                return str(extra[key])
            if "." in key and key.split(".", 1)[0] in self.res:
                return str(self.getatt(*key.split(".", 1)))
            return str(self.ref(key))
        return re.sub(r"\$\{([^}]+)\}", one, text)


if __name__ == "__main__":
    main()
