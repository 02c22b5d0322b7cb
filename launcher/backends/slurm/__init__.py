"""The SLURM backend: the plan's sbatch script submitted unchanged, here or through a login host."""

HELP = "a SLURM cluster, here or through a login host"  # what the CLI's help says of it
DOCTOR = "what sbatch needs: tools, partition, workdir"  # what kit doctor checks on such a cluster
