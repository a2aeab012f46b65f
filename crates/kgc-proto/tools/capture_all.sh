./run.sh configmap create configmap cm1 --from-literal=a=b --from-literal=c=d --from-file=bin=bin.dat --from-file=notes.txt
./run.sh configmap-empty create configmap empty
./run.sh secret-generic create secret generic s1 --from-literal=user=admin --from-literal=pw='p@ss' --from-file=bin=bin.dat
./run.sh secret-docker-registry create secret docker-registry reg --docker-server=r.example.com --docker-username=u --docker-password=p --docker-email=e@x.io
./run.sh secret-tls create secret tls tls1 --cert=tls.crt --key=tls.key
./run.sh namespace create namespace ns1
./run.sh deployment create deployment web --image=nginx:1.27 --replicas=3 --port=80
./run.sh deployment-zero create deployment zero --image=nginx --replicas=0 -- sleep 100
./run.sh service-clusterip create service clusterip svc1 --tcp=80:8080 --tcp=443:8443
./run.sh service-clusterip-headless create service clusterip headless --clusterip=None
./run.sh service-nodeport create service nodeport np1 --tcp=80:8080 --node-port=30080
./run.sh service-externalname create service externalname ext1 --external-name=example.com
./run.sh job create job j1 --image=busybox -- echo hi
./run.sh job-from-cronjob create job j2 --from=cronjob/cjson
./run.sh cronjob create cronjob cj1 --image=busybox --schedule='*/5 * * * *' --restart=OnFailure -- date
./run.sh serviceaccount create serviceaccount sa1
./run.sh role create role r1 --verb=get,list,watch --resource=pods,deployments.apps,pods/log --resource-name=x
./run.sh rolebinding create rolebinding rb1 --role=r1 --user=alice --serviceaccount=default:sa1 --group=devs
./run.sh clusterrole create clusterrole cr1 --verb=get --resource=nodes --non-resource-url='/logs/*'
./run.sh clusterrole-aggregation create clusterrole cr2 --aggregation-rule='rbac.example.com/aggregate-to-monitoring=true'
./run.sh clusterrolebinding create clusterrolebinding crb1 --clusterrole=cr1 --user=bob --group=ops
./run.sh quota create quota q1 --hard=cpu=1500m,memory=1Gi,pods=10,requests.storage=0.5Ti --scopes=BestEffort
./run.sh priorityclass create priorityclass pc1 --value=1000 --description=high --preemption-policy=Never
./run.sh priorityclass-zero create priorityclass pc0 --value=0 --global-default=true
./run.sh pdb-min-available create poddisruptionbudget pdb1 --selector=app=web --min-available=2
./run.sh pdb-max-unavailable create poddisruptionbudget pdb2 '--selector=app=web,tier notin (db)' --max-unavailable=50%
./run.sh ingress create ingress ing1 --class=nginx --rule='foo.com/bar*=svc1:8080,tls=my-cert' --rule='/exact=svc2:http' --default-backend=defsvc:http --annotation=a=b
DRY=0 ./run.sh pod-debug-copy debug p1 --copy-to=p1-copy --image=busybox --container=dbg --share-processes --set-image='*=nginx:1.27' --env=Y=2 --profile=general -- sleep 1
DRY=0 ./run.sh pod-debug-node debug node/n1 --image=busybox --profile=sysadmin -- true
DRY=0 ./run.sh token create token sa1 --duration=10m --audience=api
