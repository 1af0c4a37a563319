import actorflow as flow
flow.relu(1)
