"""The SLURM backend: the plan's sbatch script submitted unchanged, here or through a login host."""
