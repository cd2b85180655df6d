#!/bin/bash
oarsub -n kit-ci-x -t exotic -q default --project proj -p "cluster='sirius' AND gpu_compute_capability_major>=7 AND gpu_mem>=23040" -l host=1/gpu=2,walltime=1:30 --checkpoint 60 --signal 15 --array 85 -d /home/jdoe/kit/jobs -O /home/jdoe/kit/logs/OAR.%jobid%.stdout -E /home/jdoe/kit/logs/OAR.%jobid%.stderr 'bash /home/jdoe/kit/jobs/kit-lyon.sh'
