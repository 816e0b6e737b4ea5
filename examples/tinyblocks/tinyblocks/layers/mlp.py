"""The feed-forward part of a transformer block."""
from torch import nn


class Mlp(nn.Module):
    """Linear, activation, dropout, linear: a multi-layer perceptron (feed-forward network)."""

    def __init__(self, in_features, hidden_features=None, out_features=None, act_layer=nn.GELU, drop=0.0):
        super().__init__()
        hidden_features = hidden_features or in_features
        out_features = out_features or in_features
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = act_layer()
        self.drop = nn.Dropout(drop)
        self.fc2 = nn.Linear(hidden_features, out_features)

    def forward(self, x):
        return self.fc2(self.drop(self.act(self.fc1(x))))
